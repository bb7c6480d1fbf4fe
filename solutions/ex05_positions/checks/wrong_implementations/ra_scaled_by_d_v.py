# Rotary attention scaled by sqrt(d_v), the width of the values, instead of sqrt(d).
# caught by a visible test
# %% patch: rope_attention
-    scores = q_rot @ k_rot.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T, T)
+    scores = q_rot @ k_rot.transpose(-2, -1) / math.sqrt(v.shape[-1])  # (..., T, T)
