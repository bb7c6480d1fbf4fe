# Weights the raw context first and projects afterwards, W_v(weights @ context): the same wherever a row sums to 1, but a context that is all padding then returns the value bias instead of zeros (only a hidden test with qkv_bias=True sees it).
# cause: value_projected_after_weighting
# %% patch: cross_attention
-        return weights @ values, weights
+        return self.W_v(weights @ context), weights
