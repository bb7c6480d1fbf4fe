# The hand-computed score matrix is written as K Q^T (row i = key i against every query): no visible test can tell without giving the answer away.
# cause: scores_transposed
# %% cell: scores_by_hand
scores_by_hand = np.array([
    [0, 1, 1, 2],
    [1, 2, 4, 6],
    [2, 1, 3, 3],
    [1, 3, 3, 5],
])
