# The seed is not used: the weights start from whatever the global random state holds, and the batches come from an unseeded generator, so two runs differ.
# caught by a visible test
# %% patch: train
-    torch.manual_seed(seed)  # the starting weights follow from the seed
-    for module in model.modules():  # fresh weights, the same for a seed
+    for module in model.modules():  # fresh weights
 
-    batches = torch.Generator().manual_seed(seed)
+    batches = torch.Generator()
+    batches.seed()  # a fresh, random seed
