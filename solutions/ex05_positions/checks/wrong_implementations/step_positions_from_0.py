# The new tokens are rotated at positions 0, 1, ... as if every step started a new text, not after the sequence's cached tokens.
# caught by a visible test
# cause: rope_restarts_at_0
# %% patch: rope_decode_step
-    query_at = lengths.long()[:, None] + torch.arange(T_new)       # (B, T_new) positions of the new tokens
+    query_at = torch.arange(T_new).expand(B, T_new)                # (B, T_new) positions of the new tokens
