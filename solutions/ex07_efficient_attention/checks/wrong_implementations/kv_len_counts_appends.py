# len(cache) counts the appends, not the cached positions.
# caught by a visible test
# %% patch: kv_cache
         self.values = None                                         # (..., T, d_v)
+        self.appends = 0

+        self.appends += 1
         if self.keys is None:

-        return 0 if self.keys is None else self.keys.shape[-2]
+        return self.appends
