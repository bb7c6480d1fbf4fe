# RoPE's exponent doubles 2i: torch.arange(0, d, 2) already counts 2i, and the code multiplies it by 2 again (4i/d).
# caught by a visible test
# %% patch: apply_rope
-    angles = positions[:, None] * base ** (-i2 / d)                # (T, d/2)
+    angles = positions[:, None] * base ** (-2 * i2 / d)            # (T, d/2)
