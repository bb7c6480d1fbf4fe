# Multiplies the scores by the mask: forbidden keys get score 0, an ordinary score, and so non-zero weight.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    weights = stable_softmax(scores * mask, dim=-1)
    return torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
