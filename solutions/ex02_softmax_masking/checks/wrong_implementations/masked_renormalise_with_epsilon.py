# Softmax of all scores, zero the forbidden weights, renormalise with an epsilon: fails when the forbidden scores dominate.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    weights = stable_softmax(scores, dim=-1) * mask
    return weights / (weights.sum(dim=-1, keepdim=True) + 1e-9)
