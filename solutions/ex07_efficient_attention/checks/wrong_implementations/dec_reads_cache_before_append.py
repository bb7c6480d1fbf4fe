# decode_step reads the cache before appending the newest token: the token does not see itself, and the first step finds an empty cache.
# caught by a visible test
# %% patch: decode_step
-    keys, values = cache.append(k, v)                              # (..., t, d_k), (..., t, d_v)
+    keys, values = cache.keys, cache.values
+    cache.append(k, v)
