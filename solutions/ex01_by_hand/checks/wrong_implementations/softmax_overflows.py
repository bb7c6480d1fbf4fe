# Textbook softmax without subtracting the maximum: exp overflows on large scores.
# caught by a visible test
# %% cell: softmax
def softmax(S):
    e = np.exp(np.asarray(S, dtype=float))
    return e / e.sum(axis=1, keepdims=True)
