# The hand-computed score matrix is written as K Q^T (transposed).
# caught by a visible test
# %% cell: scores_by_hand
scores_by_hand = np.array([
    [4, 2, 5, 2],
    [2, 1, 3, 2],
    [4, 1, 4, 2],
    [1, 0, 1, 1],
])
# %% cell: attention_scores
def attention_scores(Q, K):
    return np.asarray(K, dtype=float) @ np.asarray(Q, dtype=float).T
