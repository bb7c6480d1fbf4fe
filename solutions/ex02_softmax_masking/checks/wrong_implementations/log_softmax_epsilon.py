# Adds a small epsilon before the log to avoid log 0: the rounded-away weights come back as log(1e-12), not their true logs.
# caught by a visible test
# cause: log_of_softmax
# %% cell: stable_log_softmax
def stable_log_softmax(x, dim=-1):
    exps = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return torch.log(exps / exps.sum(dim=dim, keepdim=True) + 1e-12)
