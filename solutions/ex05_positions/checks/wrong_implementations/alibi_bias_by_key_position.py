# ALiBi as some libraries build it, m_h * j for key j: the softmax gives the same weights, but the bias is not -m_h (i - j) and its diagonal is not 0.
# caught by a visible test
# %% patch: alibi_bias
-    offset = (j - i).to(torch.float64)                             # (T, T), <= 0 in the past
+    offset = (j + 0 * i).to(torch.float64)                         # (T, T), the key's position
