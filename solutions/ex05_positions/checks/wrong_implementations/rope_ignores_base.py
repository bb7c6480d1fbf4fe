# RoPE hard-codes 10000 for the frequencies and ignores its base argument.
# caught by a visible test
# %% patch: apply_rope
-    angles = positions[:, None] * base ** (-i2 / d)                # (T, d/2)
+    angles = positions[:, None] * 10000.0 ** (-i2 / d)             # (T, d/2)
