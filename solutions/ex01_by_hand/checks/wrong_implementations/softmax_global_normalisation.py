# Normalises by the sum over the whole matrix instead of each row.
# caught by a visible test
# %% cell: softmax
def softmax(S):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max())
    return e / e.sum()
