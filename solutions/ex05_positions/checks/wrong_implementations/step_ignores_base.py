# The frequencies use 10000 whatever the base argument says (no visible test: the visible calls use the default base).
# cause: rope_base_ignored
# %% patch: rope_decode_step
-    freqs = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)   # (d/2,)
+    freqs = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)   # (d/2,)
