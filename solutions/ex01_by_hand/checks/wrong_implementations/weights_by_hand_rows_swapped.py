# Puts the scaled row first and the unscaled row second.
# caught by a visible test
# cause: rows_swapped
# %% cell: weights_by_hand
weights_by_hand = np.array([
    [0.054, 0.544, 0.096, 0.306],
    [0.013, 0.696, 0.035, 0.256],
])
