# No shape check: a mismatch surfaces as NumPy's matmul error, which does not name the shapes.
# caught by a visible test
# %% cell: project
def project(X, W):
    return np.asarray(X, dtype=float) @ np.asarray(W, dtype=float)
