# Causal tiled attention masks j >= i: a query may not attend to its own position, and query 0 is left with no key.
# caught by a visible test
# %% patch: tiled_attention
-                s = s.masked_fill(j > i, float("-inf"))
+                s = s.masked_fill(j >= i, float("-inf"))
