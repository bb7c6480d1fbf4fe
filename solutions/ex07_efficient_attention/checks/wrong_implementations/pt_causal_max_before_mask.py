# Takes the tile's maximum after the padding mask but before the causal mask: a later key's large score sets it, and with scores in the thousands every allowed key's e^(s - m) underflows to 0.
# cause: flash_max_before_mask
# %% patch: padded_tiled_attention
-            if causal and first_k + bk - 1 > first_q:              # a key of this tile lies after a query
+            new_max = torch.maximum(run_max, tile.amax(dim=-1, keepdim=True))
+            if causal and first_k + bk - 1 > first_q:              # a key of this tile lies after a query

-            new_max = torch.maximum(run_max, tile.amax(dim=-1, keepdim=True))
-            base = torch.where(new_max == float("-inf"), 0.0, new_max)  # all padding so far: measure from 0
+            base = torch.where(new_max == float("-inf"), 0.0, new_max)  # all padding so far: measure from 0
