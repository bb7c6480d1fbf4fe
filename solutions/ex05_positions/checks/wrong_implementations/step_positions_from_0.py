# The new tokens are rotated at positions 0, 1, ... as if every step started a new text, not at L, the length of the cache.
# caught by a visible test
# %% patch: rope_decode_step
-    query_at = torch.arange(L, L + T_new)                          # (T_new,) positions of the new tokens
+    query_at = torch.arange(T_new)                                 # (T_new,) positions of the new tokens

-    scores = scores.masked_fill(key_at[None, :] > query_at[:, None], float("-inf"))
+    scores = scores.masked_fill(key_at[None, :] > L + query_at[:, None], float("-inf"))
