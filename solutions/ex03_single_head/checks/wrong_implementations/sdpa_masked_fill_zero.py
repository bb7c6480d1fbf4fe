# Masked scores set to 0 instead of -inf: a forbidden key keeps a weight of e^0 in the softmax.
# caught by a visible test
# %% patch: sdpa
-        logits = logits.masked_fill(~mask, float("-inf"))
+        logits = logits.masked_fill(~mask, 0.0)
