# The equivariance check permutes the batch axis (the sequences) instead of the token axis.
# caught by a visible test
# cause: equivariance_batch_axis
# %% patch: is_permutation_equivariant
-    T = x.shape[1]
+    T = x.shape[0]

-        if not torch.allclose(first(layer(x[:, perm])), out[:, perm], atol=atol):
+        if not torch.allclose(first(layer(x[perm])), out[perm], atol=atol):
