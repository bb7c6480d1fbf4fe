# The cached keys, already rotated, are rotated again at their positions with the new keys: the cached keys turn twice.
# caught by a visible test
# cause: cache_rotated_again
# %% patch: rope_decode_step
-    keys = torch.cat([k_cache, rotated(k)], dim=-2)                # (B, ..., L + T_new, d)
+    cache_at = (torch.arange(L) - (L - lengths.long())[:, None]).clamp(min=0)   # (B, L) positions of the rows
+    again = (cache_at.to(torch.float64)[..., None] * freqs).reshape(B, *middle, L, d // 2)
+    c, s = again.cos().to(k.dtype), again.sin().to(k.dtype)
+    a, b = k_cache[..., 0::2], k_cache[..., 1::2]
+    k_turned = torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
+    keys = torch.cat([k_turned, rotated(k)], dim=-2)               # (B, ..., L + T_new, d)
