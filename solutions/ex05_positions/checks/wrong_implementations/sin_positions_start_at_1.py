# Positions counted from 1 instead of 0.
# caught by a visible test
# %% patch: sinusoidal_encoding
-    t = torch.arange(T, dtype=torch.float64)[:, None]             # (T, 1)
+    t = torch.arange(1, T + 1, dtype=torch.float64)[:, None]      # (T, 1)
