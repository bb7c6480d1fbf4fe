# Copies chapter 1's score matrix for "the cat sat down" instead of computing the new sentence's.
# caught by a visible test
# cause: scores_of_other_inputs
# %% cell: scores_by_hand
scores_by_hand = np.array([
    [4, 2, 4, 1],
    [2, 1, 1, 0],
    [5, 3, 4, 1],
    [2, 2, 2, 1],
])
