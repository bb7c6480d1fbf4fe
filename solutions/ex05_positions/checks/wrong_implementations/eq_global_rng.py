# The random orders come from torch's global random numbers (torch.randperm(T)), not from a generator seeded with 0: the answer changes from call to call, and the notebook's random numbers move.
# caught by a visible test
# cause: equivariance_global_rng
# %% patch: is_permutation_equivariant
-    orders += [torch.randperm(T, generator=generator) for _ in range(num_trials)]
+    orders += [torch.randperm(T) for _ in range(num_trials)]
