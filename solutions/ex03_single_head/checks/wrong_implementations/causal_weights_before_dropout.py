# out uses the weights after dropout, but forward returns the weights from before dropout.
# caught by a visible test
# %% patch: causal_attention
-        weights = self.dropout(weights)                                         # identity in eval()
-        return weights @ values, weights
+        return self.dropout(weights) @ values, weights
