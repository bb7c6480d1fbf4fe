# len(cache) counts every position ever appended, not the ones the cache holds.
# caught by a visible test
# cause: cache_len_counts_all
# %% patch: rolling_kv_cache
-        return min(self.seen, self.window)
+        return self.seen
