# ALiBi fills the future with -1e9 instead of -inf.
# caught by a visible test
# %% patch: alibi_bias
-    bias = bias.masked_fill(j > i, float("-inf"))
+    bias = bias.masked_fill(j > i, -1e9)
