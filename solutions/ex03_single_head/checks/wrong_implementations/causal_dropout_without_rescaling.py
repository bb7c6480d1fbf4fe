# Hand-made dropout that zeroes weights with probability p but forgets to rescale the survivors by 1/(1-p).
# caught by a visible test
# %% patch: causal_attention
-        weights = self.dropout(weights)                                         # identity in eval()
+        if self.training:
+            weights = weights * (torch.rand_like(weights) >= self.dropout.p)
