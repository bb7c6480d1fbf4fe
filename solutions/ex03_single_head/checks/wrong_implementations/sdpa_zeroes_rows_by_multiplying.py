# Rows with no allowed key are zeroed by multiplying by the mask's any(), which keeps the NaN: NaN * 0 is NaN.
# caught by a visible test
# %% patch: sdpa
-        weights = torch.where(any_allowed, torch.softmax(logits, dim=-1), 0.0)
+        weights = torch.softmax(logits, dim=-1) * any_allowed
