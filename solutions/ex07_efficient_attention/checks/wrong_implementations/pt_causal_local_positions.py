# Masks every tile it visits, not only the one on the diagonal, and compares the positions inside the tile instead of in the sequence: tiles before the diagonal lose keys that their queries may see.
# caught by a visible test
# cause: flash_tile_positions
# %% patch: padded_tiled_attention
-            if causal and first_k + bk - 1 > first_q:              # a key of this tile lies after a query
-                q_pos = torch.arange(first_q, first_q + bq).unsqueeze(1)  # (bq, 1)
-                k_pos = torch.arange(first_k, first_k + bk).unsqueeze(0)  # (1, bk)
+            if causal:
+                q_pos = torch.arange(bq).unsqueeze(1)
+                k_pos = torch.arange(bk).unsqueeze(0)
