# RoPE slices axis 1 (x[:, 0::2]) instead of the last axis, which only works for a (T, d) matrix.
# caught by a visible test
# %% patch: apply_rope
-    x_even, x_odd = x[..., 0::2], x[..., 1::2]                     # (..., T, d/2) each
-    out = torch.empty_like(x)
-    out[..., 0::2] = x_even * cos - x_odd * sin
-    out[..., 1::2] = x_even * sin + x_odd * cos
+    x_even, x_odd = x[:, 0::2], x[:, 1::2]                         # (T, d/2) each
+    out = torch.empty_like(x)
+    out[:, 0::2] = x_even * cos - x_odd * sin
+    out[:, 1::2] = x_even * sin + x_odd * cos
