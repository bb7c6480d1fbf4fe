# Masked scores filled with -1e9 instead of -inf: a query with no allowed key gets uniform weights, not zeros.
# caught by a visible test
# %% patch: sdpa
-        logits = logits.masked_fill(~mask, float("-inf"))
-        any_allowed = mask.any(dim=-1, keepdim=True)                  # (..., Tq or 1, 1)
-        weights = torch.where(any_allowed, torch.softmax(logits, dim=-1), 0.0)
+        logits = logits.masked_fill(~mask, -1e9)
+        weights = torch.softmax(logits, dim=-1)
