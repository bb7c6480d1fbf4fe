# Writes the log-sum-exp without subtracting the maximum: e^x overflows to inf for scores in the hundreds.
# caught by a visible test
# cause: no_max_shift
# %% cell: stable_log_softmax
def stable_log_softmax(x, dim=-1):
    return x - torch.log(torch.exp(x).sum(dim=dim, keepdim=True))
