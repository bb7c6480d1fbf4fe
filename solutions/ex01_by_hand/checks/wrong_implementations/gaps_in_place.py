# Normalises the caller's weights in place (A /= A[:, :1]) before taking logarithms: the caller's A is destroyed.
# caught by a visible test
# cause: modifies_input
# %% cell: score_gaps
def score_gaps(A, d_k):
    A /= A[:, :1]
    return np.sqrt(d_k) * np.log(A)
