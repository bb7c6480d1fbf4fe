# Takes the maximum of the whole row first, then sums the exponentials block by block: two passes over x, not the online softmax.
# caught by a visible test
# %% patch: online_softmax
-    m = xs.new_full(xs.shape[:-1] + (1,), float("-inf"))           # (..., 1), the running maximum
+    m = xs.amax(dim=-1, keepdim=True)                              # (..., 1), the maximum of the whole row
