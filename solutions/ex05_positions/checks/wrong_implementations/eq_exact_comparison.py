# The equivariance check compares with torch.equal, ignoring atol: rounding or a tiny difference counts as a failure.
# caught by a visible test
# cause: equivariance_exact
# %% patch: is_permutation_equivariant
-        if not torch.allclose(first(layer(x[:, perm])), out[:, perm], atol=atol):
+        if not torch.equal(first(layer(x[:, perm])), out[:, perm]):
