# Takes the maximum along dim but sums along the last dimension.
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    exps = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=-1, keepdim=True)
