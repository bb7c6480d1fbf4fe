# The equivariance check compares nothing and always says True.
# caught by a visible test
# cause: equivariance_always_true
# %% cell: is_permutation_equivariant
def is_permutation_equivariant(layer, x, num_trials=3, atol=1e-5):
    return True
