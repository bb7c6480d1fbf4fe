# The scores are scaled by the square root of the width of the values, d_v, not of the queries and keys.
# caught by a visible test
# cause: scaled_by_sqrt_dv
# %% patch: rope_decode_step
-    scores = rotated(q) @ keys.transpose(-2, -1) / math.sqrt(d)    # (B, ..., T_new, L + T_new)
+    scores = rotated(q) @ keys.transpose(-2, -1) / math.sqrt(v.shape[-1])
