# Divides the scores by d_k = 3 instead of its square root: flatter, in the right order, so no visible test can tell without the answer.
# cause: d_k_for_sqrt
# %% cell: weights_by_hand
weights_by_hand = np.array([
    [0.013, 0.696, 0.035, 0.256],
    [0.112, 0.426, 0.157, 0.305],
])
