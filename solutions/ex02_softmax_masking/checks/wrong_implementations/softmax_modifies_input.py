# Subtracts the maximum in place (x -= m), overwriting the caller's scores.
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    x -= x.amax(dim=dim, keepdim=True)
    exps = torch.exp(x)
    return exps / exps.sum(dim=dim, keepdim=True)
