# Multiplies the scores by sqrt(d_k) instead of dividing.
# caught by a visible test
# %% cell: scale_scores
def scale_scores(S, d_k):
    return np.asarray(S, dtype=float) * np.sqrt(d_k)
