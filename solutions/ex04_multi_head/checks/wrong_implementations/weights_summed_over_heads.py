# The default weights are the heads' weights summed, not averaged: each row then sums to H.
# caught by a visible test
# cause: heads_summed
# %% patch: multihead_cross_attention
-        return out, (weights.mean(dim=1) if average_attn_weights else weights)
+        return out, (weights.sum(dim=1) if average_attn_weights else weights)
