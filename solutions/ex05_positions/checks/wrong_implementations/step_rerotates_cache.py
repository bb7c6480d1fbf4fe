# The whole key cache, already rotated, is rotated again with the new keys: the cached keys turn twice.
# caught by a visible test
# %% patch: rope_decode_step
-    turn = query_at.to(torch.float64)[:, None] * freqs             # (T_new, d/2): float64, exact for long caches
+    turn = torch.arange(L + T_new).to(torch.float64)[:, None] * freqs

-        a, b = x[..., 0::2], x[..., 1::2]                          # the two members of every pair
-        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
+        a, b = x[..., 0::2], x[..., 1::2]                          # the two members of every pair
+        c, s = c[-x.shape[-2]:], s[-x.shape[-2]:]
+        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)

-    keys = torch.cat([k_cache, rotated(k)], dim=-2)                # (..., L + T_new, d)
+    keys = rotated(torch.cat([k_cache, k], dim=-2))                # (..., L + T_new, d)
