# Mask read the wrong way round: scores are hidden where the mask is True ("may attend") instead of False.
# caught by a visible test
# %% patch: multi_head_attention
-            scores = scores.masked_fill(~mask, float("-inf"))
+            scores = scores.masked_fill(mask, float("-inf"))
