# Rebuilds the gaps from ratios of weights raised to a power, exp-style: (A_ij / A_i0) ** sqrt(d_k) overflows to inf for scores hundreds apart.
# cause: overflow
# %% cell: score_gaps
def score_gaps(A, d_k):
    A = np.asarray(A, dtype=float)
    return np.log((A / A[:, :1]) ** np.sqrt(d_k))
