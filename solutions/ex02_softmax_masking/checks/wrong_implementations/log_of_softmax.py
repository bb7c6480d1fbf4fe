# Takes torch.log of a stable softmax: weights the dtype rounds to 0 become log 0 = -inf.
# caught by a visible test
# cause: log_of_softmax
# %% cell: stable_log_softmax
def stable_log_softmax(x, dim=-1):
    exps = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return torch.log(exps / exps.sum(dim=dim, keepdim=True))
