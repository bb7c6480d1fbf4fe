# Returns the buffers' slots in slot order, not oldest position first: right until the buffer wraps around.
# caught by a visible test
# cause: cache_slot_order
# %% patch: rolling_kv_cache
-        in_time = torch.arange(self.seen - n, self.seen) % self.window   # slots, oldest position first
+        in_time = torch.arange(n)
