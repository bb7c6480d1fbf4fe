# Scores are not scaled at all: scale_scores returns them unchanged.
# caught by a visible test
# %% cell: scale_scores
def scale_scores(S, d_k):
    return np.asarray(S, dtype=float)
