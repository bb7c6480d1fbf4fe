# One arithmetic slip in the hand-computed score matrix (row 2, column 1).
# %% cell: scores_by_hand
scores_by_hand = np.array([
    [4, 2, 4, 1],
    [2, 1, 1, 0],
    [5, 2, 4, 1],
    [2, 2, 2, 1],
])
