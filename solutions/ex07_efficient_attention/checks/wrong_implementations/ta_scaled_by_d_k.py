# Tiled attention divides the scores by d_k instead of sqrt(d_k).
# caught by a visible test
# %% patch: tiled_attention
-    scale = 1.0 / math.sqrt(q.shape[-1])
+    scale = 1.0 / q.shape[-1]
