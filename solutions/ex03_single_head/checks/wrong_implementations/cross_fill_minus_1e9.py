# Padding filled with -1e9 instead of -inf, and no zeroing: a context that is all padding gets uniform weights.
# caught by a visible test
# cause: large_negative_fill
# %% patch: cross_attention
-            weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
+            weights = torch.softmax(scores.masked_fill(hidden, -1e9), dim=-1)

-            weights = torch.where(has_real_token, weights, torch.zeros_like(weights))
+            pass
