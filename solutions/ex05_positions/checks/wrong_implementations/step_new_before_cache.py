# The new keys and values are put before the cached ones: the cache no longer lists its tokens in the order of their positions.
# caught by a visible test
# cause: cache_new_before_old
# %% patch: rope_decode_step
-    keys = torch.cat([k_cache, rotated(k)], dim=-2)                # (B, ..., L + T_new, d)
-    values = torch.cat([v_cache, v], dim=-2)                       # (B, ..., L + T_new, d_v), never rotated
+    keys = torch.cat([rotated(k), k_cache], dim=-2)                # (B, ..., L + T_new, d)
+    values = torch.cat([v, v_cache], dim=-2)                       # (B, ..., L + T_new, d_v), never rotated
