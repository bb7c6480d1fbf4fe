# Grouped-query attention repeats each key/value head G times instead of H // G times.
# caught by a visible test
# %% patch: grouped_query_attention
-    k = k.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_k): head h is k[:, h // (H // G)]
-    v = v.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_v)
+    k = k.repeat_interleave(G, dim=1)                              # (B, H, T, d_k)
+    v = v.repeat_interleave(G, dim=1)                              # (B, H, T, d_v)
