# forward accepts a mask and never uses it: every query attends to every key.
# caught by a visible test
# %% patch: multi_head_attention
-        if mask is not None:
-            scores = scores.masked_fill(~mask, float("-inf"))
-        weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk), rows sum to 1
+        weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk), rows sum to 1
