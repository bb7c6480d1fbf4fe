# Works the row with chapter 1's pencil shortcuts (floor(S/2), 3 for e): the order is right, the sizes are not; no visible test can tell without the answer.
# cause: pencil_shortcuts
# %% cell: weights_by_hand
weights_by_hand = np.array([
    [0.013, 0.696, 0.035, 0.256],
    [0.071, 0.643, 0.072, 0.214],
])
