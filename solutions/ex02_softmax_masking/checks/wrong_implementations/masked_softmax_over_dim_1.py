# Takes the softmax over dim=1, which is the keys only for a (Tq, Tk) matrix; on (B, H, Tq, Tk) it is the heads.
# caught by a visible test
# %% cell: masked_softmax
def masked_softmax(scores, mask):
    if torch.broadcast_shapes(mask.shape, scores.shape) != scores.shape:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to scores of shape {tuple(scores.shape)}")
    weights = stable_softmax(scores.masked_fill(~mask, float("-inf")), dim=1)
    return torch.nan_to_num(weights, nan=0.0)
