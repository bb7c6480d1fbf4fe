# The softmax runs over all keys, and the forbidden weights are zeroed afterwards: the rows no longer sum to 1.
# caught by a visible test
# %% patch: sdpa
-        logits = logits.masked_fill(~mask, float("-inf"))
-        any_allowed = mask.any(dim=-1, keepdim=True)                  # (..., Tq or 1, 1)
-        weights = torch.where(any_allowed, torch.softmax(logits, dim=-1), 0.0)
+        weights = torch.softmax(logits, dim=-1).masked_fill(~mask, 0.0)
