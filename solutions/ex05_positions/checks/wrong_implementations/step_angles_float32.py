# The positions, frequencies and angles are computed in float32: near position 100 000 the angles lose their last digits.
# caught by a visible test
# cause: rope_float32_angles
# %% patch: rope_decode_step
-    freqs = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)   # (d/2,)
-    turn = query_at.to(torch.float64)[..., None] * freqs           # (B, T_new, d/2): float64, exact for long caches
+    freqs = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)   # (d/2,)
+    turn = query_at.to(torch.float32)[..., None] * freqs           # (B, T_new, d/2)
