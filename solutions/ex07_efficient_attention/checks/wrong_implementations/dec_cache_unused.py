# decode_step appends to the cache but attends to the newest token only: the cache is filled and never used.
# caught by a visible test
# %% patch: decode_step
-    keys, values = cache.append(k, v)                              # (..., t, d_k), (..., t, d_v)
+    cache.append(k, v)
+    keys, values = k, v
