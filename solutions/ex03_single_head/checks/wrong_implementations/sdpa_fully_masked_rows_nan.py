# Masks with -inf but never handles a query with no allowed key: its softmax is 0/0, so weights and output are NaN.
# caught by a visible test
# %% patch: sdpa
-        any_allowed = mask.any(dim=-1, keepdim=True)                  # (..., Tq or 1, 1)
-        weights = torch.where(any_allowed, torch.softmax(logits, dim=-1), 0.0)
+        weights = torch.softmax(logits, dim=-1)
