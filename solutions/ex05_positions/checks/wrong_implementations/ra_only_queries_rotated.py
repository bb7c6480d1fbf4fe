# Only the queries are rotated, so the scores depend on absolute positions.
# caught by a visible test
# %% patch: rope_attention
-    k_rot = apply_rope(k, positions)                               # (..., T, d)
+    k_rot = k                                                      # (..., T, d)
