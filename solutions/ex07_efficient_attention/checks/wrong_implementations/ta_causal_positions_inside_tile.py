# Causal tiled attention masks every tile with the positions inside the tile (an upper triangle per tile), so a query loses keys of earlier blocks: off by whole blocks.
# caught by a visible test
# %% patch: tiled_attention
-            if causal and j0 == i0:                                # the tile on the diagonal
-                i = torch.arange(i0, i0 + s.shape[-2])[:, None]    # (bq, 1) query positions
-                j = torch.arange(j0, j0 + s.shape[-1])[None, :]    # (1, bk) key positions
+            if causal:
+                i = torch.arange(s.shape[-2])[:, None]             # (bq, 1) query positions
+                j = torch.arange(s.shape[-1])[None, :]             # (1, bk) key positions
