# Unrolls the full buffer with torch.cat along dimension 0 instead of -2: a RuntimeError as soon as the buffer has wrapped around, which the check must explain.
# caught by a visible test
# cause: cache_fails_when_full
# %% patch: rolling_kv_cache
-        in_time = torch.arange(self.seen - n, self.seen) % self.window   # slots, oldest position first
-        return self.k_buf[..., in_time, :], self.v_buf[..., in_time, :]
+        if n < self.window:
+            return self.k_buf[..., :n, :], self.v_buf[..., :n, :]
+        start = self.seen % self.window
+        return (torch.cat([self.k_buf[..., start:, :], self.k_buf[..., :start, :]], dim=0),
+                torch.cat([self.v_buf[..., start:, :], self.v_buf[..., :start, :]], dim=0))
