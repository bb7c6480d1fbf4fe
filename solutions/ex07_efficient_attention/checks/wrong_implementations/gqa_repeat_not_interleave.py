# Grouped-query attention repeats the key/value heads with repeat (0, 1, 0, 1, ...) instead of repeat_interleave (0, 0, 1, 1, ...): query heads are paired with the wrong key/value heads.
# caught by a visible test
# %% patch: grouped_query_attention
-    k = k.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_k): head h is k[:, h // (H // G)]
-    v = v.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_v)
+    k = k.repeat(1, H // G, 1, 1)                                  # (B, H, T, d_k)
+    v = v.repeat(1, H // G, 1, 1)                                  # (B, H, T, d_v)
