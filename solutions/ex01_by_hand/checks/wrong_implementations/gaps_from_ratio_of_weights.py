# Takes the logarithm of each weight's ratio to the row's first weight, A / A[:, :1]: when the first weight is below about 1e-308 and another near 1, the ratio overflows to inf.
# cause: overflow
# %% cell: score_gaps
def score_gaps(A, d_k):
    A = np.asarray(A, dtype=float)
    ratios = A / A[:, :1]                                   # (T_q, T_k): e^((S_ij - S_i0) / sqrt(d_k))
    return np.sqrt(d_k) * np.log(ratios)
