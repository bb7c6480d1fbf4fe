# ALiBi adds +m (i - j), a bonus for distant keys, instead of the penalty -m (i - j).
# caught by a visible test
# %% patch: alibi_bias
-    offset = (j - i).to(torch.float64)                             # (T, T), <= 0 in the past
+    offset = (i - j).to(torch.float64)                             # (T, T)
