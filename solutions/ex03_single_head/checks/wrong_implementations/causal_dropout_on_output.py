# Dropout is applied to the output instead of the attention weights.
# caught by a visible test
# %% patch: causal_attention
-        weights = self.dropout(weights)                                         # identity in eval()
-        return weights @ values, weights
+        return self.dropout(weights @ values), weights
