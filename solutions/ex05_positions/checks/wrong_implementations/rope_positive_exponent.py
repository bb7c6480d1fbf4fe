# Frequencies base**(2i/d) instead of base**(-2i/d): later pairs turn faster instead of slower.
# caught by a visible test
# %% patch: apply_rope
-    angles = positions[:, None] * base ** (-i2 / d)                # (T, d/2)
+    angles = positions[:, None] * base ** (i2 / d)                 # (T, d/2)
