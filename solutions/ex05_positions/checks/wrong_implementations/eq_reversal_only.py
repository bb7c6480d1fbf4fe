# The equivariance check tries one permutation only, the reversal: a layer with a mirror-symmetric position table passes.
# caught by a visible test
# cause: equivariance_reversal_only
# %% patch: is_permutation_equivariant
     orders = [torch.arange(T - 1, -1, -1)]                         # the reversal
-    orders += [torch.randperm(T, generator=generator) for _ in range(num_trials)]
