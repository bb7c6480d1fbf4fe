# Padding filled with -1e9 instead of -inf and no zeroing: a sequence that is all padding spreads its weight evenly over the padding.
# caught by a visible test
# cause: empty_sequence_spread
# %% patch: multihead_cross_attention
-            weights = scores.masked_fill(padding, float("-inf")).softmax(dim=-1)
+            weights = scores.masked_fill(padding, -1e9).softmax(dim=-1)

-            weights = torch.where(nothing_to_see, torch.zeros_like(weights), weights)
+            pass
