# ALiBi masks j < i instead of j > i: the -inf land in the past, below the diagonal.
# caught by a visible test
# %% patch: alibi_bias
-    bias = bias.masked_fill(j > i, float("-inf"))
+    bias = bias.masked_fill(j < i, float("-inf"))
