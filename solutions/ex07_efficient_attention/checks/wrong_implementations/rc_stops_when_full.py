# Keeps the first window positions and drops every later one, instead of overwriting the oldest.
# caught by a visible test
# cause: cache_stops_when_full
# %% patch: rolling_kv_cache
-        slots = torch.arange(self.seen + t - kept, self.seen + t) % self.window
-        self.k_buf[..., slots, :] = k[..., t - kept:, :]
-        self.v_buf[..., slots, :] = v[..., t - kept:, :]
+        free = max(0, min(t, self.window - self.seen))
+        self.k_buf[..., self.seen:self.seen + free, :] = k[..., :free, :]
+        self.v_buf[..., self.seen:self.seen + free, :] = v[..., :free, :]

-        in_time = torch.arange(self.seen - n, self.seen) % self.window   # slots, oldest position first
+        in_time = torch.arange(n)
