# Computes K Q^T instead of Q K^T, so row i holds key i against every query.
# caught by a visible test
# %% cell: attention_scores
def attention_scores(Q, K):
    return np.asarray(K, dtype=float) @ np.asarray(Q, dtype=float).T
