# Takes the column of key "soup" (every query's score for it, [1, 3, 3, 5]) instead of the row of query "soup".
# cause: key_column
# %% cell: weights_by_hand
weights_by_hand = np.array([
    [0.014, 0.105, 0.105, 0.776],
    [0.057, 0.182, 0.183, 0.578],
])
