# Sine and cosine swapped: cosines in the even columns, sines in the odd ones.
# caught by a visible test
# %% patch: sinusoidal_encoding
-    pe[:, 0::2] = torch.sin(angles)
-    pe[:, 1::2] = torch.cos(angles)
+    pe[:, 0::2] = torch.cos(angles)
+    pe[:, 1::2] = torch.sin(angles)
