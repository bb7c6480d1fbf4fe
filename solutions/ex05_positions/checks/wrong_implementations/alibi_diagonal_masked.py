# ALiBi's mask is off by one: it fills j >= i with -inf, so a query may not attend to its own position.
# caught by a visible test
# %% patch: alibi_bias
-    bias = bias.masked_fill(j > i, float("-inf"))
+    bias = bias.masked_fill(j >= i, float("-inf"))
