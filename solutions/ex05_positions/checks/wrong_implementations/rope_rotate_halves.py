# RoPE pairs feature i with feature i + d/2 (the rotate-half convention) instead of the interleaved pairs (2i, 2i+1).
# caught by a visible test
# %% patch: apply_rope
-    x_even, x_odd = x[..., 0::2], x[..., 1::2]                     # (..., T, d/2) each
-    out = torch.empty_like(x)
-    out[..., 0::2] = x_even * cos - x_odd * sin
-    out[..., 1::2] = x_even * sin + x_odd * cos
-    return out
+    x1, x2 = x[..., : d // 2], x[..., d // 2:]                      # (..., T, d/2) each
+    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
