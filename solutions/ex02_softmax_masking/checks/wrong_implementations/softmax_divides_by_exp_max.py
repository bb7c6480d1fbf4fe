# Shifts after exponentiating (exp(x) / exp(max)): the same formula on paper, but exp(x) has already overflowed.
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    exps = torch.exp(x) / torch.exp(x.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)
