# ALiBi penalises the distance |i - j| on both sides and masks nothing: the future keys get -m |i - j|, not -inf.
# caught by a visible test
# %% patch: alibi_bias
-    offset = (j - i).to(torch.float64)                             # (T, T), <= 0 in the past
+    offset = -(j - i).abs().to(torch.float64)                      # (T, T), <= 0 everywhere

-    bias = bias.masked_fill(j > i, float("-inf"))
