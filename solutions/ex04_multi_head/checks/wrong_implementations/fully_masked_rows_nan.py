# Fully masked rows left as the softmax returns them: a query whose mask allows no key gets NaN weights (0/0) and a NaN output.
# caught by a visible test
# %% patch: multi_head_attention
-        if mask is not None:  # a row with no allowed key is NaN (0/0): make it 0
-            weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
