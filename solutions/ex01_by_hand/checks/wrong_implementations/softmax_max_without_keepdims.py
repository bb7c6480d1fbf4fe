# Forgets keepdims when subtracting the row maximum, so the maxima broadcast across columns.
# caught by a visible test
# %% cell: softmax
def softmax(S):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max(axis=1))
    return e / e.sum(axis=1, keepdims=True)
