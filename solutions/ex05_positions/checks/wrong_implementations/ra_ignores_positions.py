# rope_attention does not pass its positions on: apply_rope always uses 0, 1, ..., T-1.
# caught by a visible test
# %% patch: rope_attention
-    q_rot = apply_rope(q, positions)                               # (..., T, d)
-    k_rot = apply_rope(k, positions)                               # (..., T, d)
+    q_rot = apply_rope(q)                                          # (..., T, d)
+    k_rot = apply_rope(k)                                          # (..., T, d)
