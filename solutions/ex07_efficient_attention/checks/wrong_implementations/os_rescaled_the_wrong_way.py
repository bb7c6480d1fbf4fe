# The online softmax rescales the running sum by exp(m_new - m), the inverse of the right factor exp(m - m_new).
# caught by a visible test
# %% patch: online_softmax
-        l = l * torch.exp(m - ref) + torch.exp(block - ref).sum(dim=-1, keepdim=True)
+        l = l * torch.exp(ref - torch.where(m == float("-inf"), 0.0, m)) + torch.exp(block - ref).sum(dim=-1, keepdim=True)
