# ALiBi built for a single head: one slope, 2**(-8/H), and one (T, T) matrix instead of one per head.
# caught by a visible test
# %% patch: alibi_bias
-    bias = slopes[:, None, None] * offset                          # (H, T, T)
+    bias = slopes[0] * offset                                      # (T, T)
