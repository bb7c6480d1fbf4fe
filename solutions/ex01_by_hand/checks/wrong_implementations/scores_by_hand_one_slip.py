# One arithmetic slip in the hand-computed score matrix (row 2, column 1): no visible test can find it without giving the answer away.
# cause: score_slip
# %% cell: scores_by_hand
scores_by_hand = np.array([
    [0, 1, 2, 1],
    [1, 2, 1, 3],
    [1, 3, 3, 3],
    [2, 6, 3, 5],
])
