# RoPE builds its result as a float32 tensor, so float64 input comes back as float32.
# caught by a visible test
# %% patch: apply_rope
-    out = torch.empty_like(x)
+    out = torch.empty(x.shape)
