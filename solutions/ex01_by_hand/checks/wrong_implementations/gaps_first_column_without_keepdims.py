# Divides by A[:, 0] without keeping it as a column: on a square A, column j is divided by the first weight of row j.
# caught by a visible test
# cause: no_keepdims
# %% cell: score_gaps
def score_gaps(A, d_k):
    A = np.asarray(A, dtype=float)
    return np.sqrt(d_k) * np.log(A / A[:, 0])
