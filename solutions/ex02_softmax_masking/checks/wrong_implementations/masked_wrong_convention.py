# Treats True as "blocked" (masked_fill(mask, ...)), the opposite of the course's convention.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    weights = stable_softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return torch.where((~mask).any(dim=-1, keepdim=True), weights, 0.0)
