# Rotary attention without the 1/sqrt(d) scale.
# caught by a visible test
# %% patch: rope_attention
-    scores = q_rot @ k_rot.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T, T)
+    scores = q_rot @ k_rot.transpose(-2, -1)                       # (..., T, T)
