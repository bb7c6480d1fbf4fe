# Fills forbidden scores with -1e9: empty rows become uniform, and float16 cannot hold the fill value.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    return stable_softmax(scores.masked_fill(~mask, -1e9), dim=-1)
