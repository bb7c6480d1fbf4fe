# Subtracts the maximum of the whole tensor instead of each row's: rows far below it underflow to 0/0.
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    exps = torch.exp(x - x.max())
    return exps / exps.sum(dim=dim, keepdim=True)
