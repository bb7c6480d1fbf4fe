# Seeds torch's global generator with torch.manual_seed(0) and draws the orders from it: the same orders as a generator of its own, but the notebook's global random numbers are reset at every call.
# caught by a visible test
# cause: equivariance_seeds_global_rng
# %% patch: is_permutation_equivariant
-    generator = torch.Generator().manual_seed(0)
+    torch.manual_seed(0)

-    orders += [torch.randperm(T, generator=generator) for _ in range(num_trials)]
+    orders += [torch.randperm(T) for _ in range(num_trials)]
