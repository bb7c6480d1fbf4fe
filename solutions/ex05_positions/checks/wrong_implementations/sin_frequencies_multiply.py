# The angle multiplies the position by 10000**(2i/D) instead of dividing by it (base**(2i/D) for base**(-2i/D)).
# caught by a visible test
# %% patch: sinusoidal_encoding
-    angles = t / 10000.0 ** (i2 / D)                               # (T, D/2)
+    angles = t * 10000.0 ** (i2 / D)                               # (T, D/2)
