# The running sum of the online softmax is not rescaled when the maximum grows: the terms already in it stay measured from the old maximum.
# caught by a visible test
# %% patch: online_softmax
-        l = l * torch.exp(m - ref) + torch.exp(block - ref).sum(dim=-1, keepdim=True)
+        l = l + torch.exp(block - ref).sum(dim=-1, keepdim=True)
