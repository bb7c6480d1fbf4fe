# Fills -inf and takes the softmax, but leaves the NaN of rows with no allowed key.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    return stable_softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
