# Builds the whole (B, 1, Tq, Tk) mask of padding and causality once, before the loops, and slices each tile's part from it: right values, but a tensor as large as the score matrix.
# caught by a visible test
# cause: flash_score_sized_tensor
# %% patch: padded_tiled_attention
-    ignored = key_padding_mask[:, None, None, :]                   # (B, 1, 1, Tk): broadcasts over heads, queries
+    ignored = key_padding_mask[:, None, None, :].expand(-1, 1, Tq, Tk)
+    if causal:
+        ignored = ignored | torch.ones(Tq, Tk, dtype=torch.bool).triu(diagonal=1)

-            tile = tile.masked_fill(ignored[..., first_k:first_k + bk], float("-inf"))
+            tile = tile.masked_fill(ignored[..., first_q:first_q + bq, first_k:first_k + bk], float("-inf"))
