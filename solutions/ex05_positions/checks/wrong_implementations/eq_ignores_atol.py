# The equivariance check calls torch.allclose with its default tolerances, ignoring the atol argument.
# caught by a visible test
# cause: equivariance_atol_ignored
# %% patch: is_permutation_equivariant
-        if not torch.allclose(first(layer(x[:, perm])), out[:, perm], atol=atol):
+        if not torch.allclose(first(layer(x[:, perm])), out[:, perm]):
