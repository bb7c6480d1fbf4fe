# Tiled attention divides by the sum of the last block of keys only: each block replaces the running sum.
# caught by a visible test
# %% patch: tiled_attention
-            l = c * l + p.sum(dim=-1, keepdim=True)
+            l = p.sum(dim=-1, keepdim=True)
