# Tiled attention without the 1/sqrt(d_k) scale.
# caught by a visible test
# %% patch: tiled_attention
-    scale = 1.0 / math.sqrt(q.shape[-1])
+    scale = 1.0
