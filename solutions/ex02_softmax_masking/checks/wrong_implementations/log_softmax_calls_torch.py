# Calls torch.log_softmax instead of writing the log-sum-exp.
# caught by a visible test
# cause: calls_torch
# %% cell: stable_log_softmax
def stable_log_softmax(x, dim=-1):
    return torch.log_softmax(x, dim=dim)
