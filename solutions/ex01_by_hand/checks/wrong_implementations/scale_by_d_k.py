# Divides by d_k instead of its square root.
# caught by a visible test
# %% cell: scale_scores
def scale_scores(S, d_k):
    return np.asarray(S, dtype=float) / d_k
