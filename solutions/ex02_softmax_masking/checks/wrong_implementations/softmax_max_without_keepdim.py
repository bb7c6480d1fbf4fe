# Subtracts the maximum without keepdim=True: on a matrix the row maxima line up with the columns.
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    exps = torch.exp(x - x.max(dim=dim).values)
    return exps / exps.sum(dim=dim, keepdim=True)
