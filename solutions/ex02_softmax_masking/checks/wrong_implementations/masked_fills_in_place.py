# Uses masked_fill_ (in place): the caller's scores are overwritten with -inf.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    if torch.broadcast_shapes(mask.shape, scores.shape) != scores.shape:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to scores of shape {tuple(scores.shape)}")
    weights = stable_softmax(scores.masked_fill_(~mask, float("-inf")), dim=-1)
    return torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
