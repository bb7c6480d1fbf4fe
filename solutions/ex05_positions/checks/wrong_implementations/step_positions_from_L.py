# Every sequence's new tokens are rotated at positions L, L + 1, ..., as if each cache were full (chapter 7's apply_rope at one offset for the whole batch): wrong for every sequence with fewer than L cached tokens.
# caught by a visible test
# cause: rope_same_start
# %% patch: rope_decode_step
-    query_at = lengths.long()[:, None] + torch.arange(T_new)       # (B, T_new) positions of the new tokens
+    query_at = (L + torch.arange(T_new)).expand(B, T_new)          # (B, T_new) positions of the new tokens
