# Both masks read with chapter 5's convention (True = may attend) instead of nn.MultiheadAttention's (True = may not attend, True = padding).
# caught by a visible test
# cause: padding_inverted
# %% patch: like_torch
-            logits = logits.masked_fill(attn_mask, float("-inf"))       # True = forbidden
+            logits = logits.masked_fill(~attn_mask, float("-inf"))

-        logits = logits.masked_fill(key_padding_mask[:, None, :], float("-inf"))
+        logits = logits.masked_fill(~key_padding_mask[:, None, :], float("-inf"))
