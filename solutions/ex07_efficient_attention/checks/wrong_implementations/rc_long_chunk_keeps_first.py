# Keeps the first window positions of a chunk longer than the window (a long prompt), k[..., :window, :], instead of its last ones: the positions it writes are not the latest.
# caught by a visible test
# cause: cache_long_chunk_keeps_first
# %% patch: rolling_kv_cache
-        slots = torch.arange(self.seen + t - kept, self.seen + t) % self.window
-        self.k_buf[..., slots, :] = k[..., t - kept:, :]
-        self.v_buf[..., slots, :] = v[..., t - kept:, :]
+        slots = torch.arange(self.seen + t - kept, self.seen + t) % self.window
+        self.k_buf[..., slots, :] = k[..., :kept, :]
+        self.v_buf[..., slots, :] = v[..., :kept, :]
