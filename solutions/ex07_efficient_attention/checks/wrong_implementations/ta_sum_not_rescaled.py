# Tiled attention rescales the running output but not the running sum when the maximum grows.
# caught by a visible test
# %% patch: tiled_attention
-            l = c * l + p.sum(dim=-1, keepdim=True)
+            l = l + p.sum(dim=-1, keepdim=True)
