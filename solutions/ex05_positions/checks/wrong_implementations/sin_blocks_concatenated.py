# The sines and the cosines concatenated as two blocks instead of interleaved in pairs.
# caught by a visible test
# %% patch: sinusoidal_encoding
-    pe = torch.empty(T, D, dtype=torch.float64)
-    pe[:, 0::2] = torch.sin(angles)
-    pe[:, 1::2] = torch.cos(angles)
+    pe = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)  # (T, D)
