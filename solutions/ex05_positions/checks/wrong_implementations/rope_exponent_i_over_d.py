# RoPE frequencies with the exponent i/d instead of 2i/d.
# caught by a visible test
# %% patch: apply_rope
-    i2 = torch.arange(0, d, 2, dtype=torch.float64)                # (d/2,) = 2i
+    i2 = torch.arange(d // 2, dtype=torch.float64)                 # (d/2,) = i
