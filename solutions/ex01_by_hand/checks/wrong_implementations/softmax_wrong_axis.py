# Softmax normalised down each column (axis=0) instead of along each row.
# caught by a visible test
# %% cell: softmax
def softmax(S):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
