# Masks every tile with the first columns of the padding mask, key_padding_mask[:, :bk], instead of the tile's own, [:, j0:j0 + bk].
# caught by a visible test
# cause: flash_nan_guard_zeros
# %% patch: padded_tiled_attention
-            tile = tile.masked_fill(ignored[..., first_k:first_k + bk], float("-inf"))
+            tile = tile.masked_fill(ignored[..., :bk], float("-inf"))
