# Subtracts the log of the shifted sum from x itself, forgetting the maximum it shifted by: every slice is off by its maximum.
# caught by a visible test
# cause: offset
# %% patch: stable_log_softmax
-    return below_top - log_total
+    return x - log_total
