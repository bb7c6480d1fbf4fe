# Subtracts the maximum of the whole matrix, not of each row: rows far below it underflow to 0/0.
# caught by a visible test
# %% cell: softmax
def softmax(S):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max())
    return e / e.sum(axis=1, keepdims=True)
