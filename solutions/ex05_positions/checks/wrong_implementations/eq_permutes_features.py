# The equivariance check permutes the features (the last axis) instead of the tokens.
# caught by a visible test
# %% patch: is_permutation_equivariant
-    T = x.shape[1]
+    T = x.shape[-1]

-        if not torch.allclose(first(layer(x[:, perm])), out[:, perm], atol=atol):
+        if not torch.allclose(first(layer(x[..., perm])), out[..., perm], atol=atol):
