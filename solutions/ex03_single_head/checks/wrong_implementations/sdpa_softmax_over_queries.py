# Softmax over dim=-2 (the queries) instead of dim=-1 (the keys): columns sum to 1, rows do not.
# caught by a visible test
# %% patch: sdpa
-        weights = torch.softmax(logits, dim=-1)
+        weights = torch.softmax(logits, dim=-2)

-        weights = torch.where(any_allowed, torch.softmax(logits, dim=-1), 0.0)
+        weights = torch.where(any_allowed, torch.nan_to_num(torch.softmax(logits, dim=-2)), 0.0)
