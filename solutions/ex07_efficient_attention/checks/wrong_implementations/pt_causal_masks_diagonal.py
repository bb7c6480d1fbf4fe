# Masks j >= i in the tile on the diagonal, an off-by-one that hides each query's own key: query 0 of an unpadded sequence is left without any key. The memory cell must not fail for it.
# caught by a visible test
# cause: flash_padding_columns
# %% patch: padded_tiled_attention
-                tile = tile.masked_fill(k_pos > q_pos, float("-inf"))
+                tile = tile.masked_fill(k_pos >= q_pos, float("-inf"))
