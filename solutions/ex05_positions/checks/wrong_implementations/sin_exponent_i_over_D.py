# Frequencies with the exponent i/D instead of 2i/D: the pair index i counted with torch.arange(D // 2).
# caught by a visible test
# %% patch: sinusoidal_encoding
-    i2 = torch.arange(0, D, 2, dtype=torch.float64)                # (D/2,) = 2i
+    i2 = torch.arange(D // 2, dtype=torch.float64)                 # (D/2,) = i
