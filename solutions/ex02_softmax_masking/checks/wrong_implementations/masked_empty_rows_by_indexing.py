# Zeroes empty rows with boolean indexing, which only works when the mask has the full shape of the scores.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    weights = stable_softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    weights[~mask.any(dim=-1)] = 0.0
    return weights
