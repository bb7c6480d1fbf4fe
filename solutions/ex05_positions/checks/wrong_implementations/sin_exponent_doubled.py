# The exponent doubles 2i: torch.arange(0, D, 2) already counts 2i, and the code multiplies it by 2 again (4i/D).
# caught by a visible test
# %% patch: sinusoidal_encoding
-    angles = t / 10000.0 ** (i2 / D)                               # (T, D/2)
+    angles = t / 10000.0 ** (2 * i2 / D)                           # (T, D/2)
