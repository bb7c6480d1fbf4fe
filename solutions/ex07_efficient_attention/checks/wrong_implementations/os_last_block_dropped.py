# The online softmax stops before the last, shorter block: its entries count in no maximum and no sum.
# caught by a visible test
# %% patch: online_softmax
-    for start in range(0, xs.shape[-1], block_size):
+    for start in range(0, xs.shape[-1] - block_size + 1, block_size):
