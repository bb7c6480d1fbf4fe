# Always normalises over the last dimension, whatever dim says.
# caught by a visible test
# cause: ignores_dim
# %% cell: stable_log_softmax
def stable_log_softmax(x, dim=-1):
    below_top = x - x.amax(dim=-1, keepdim=True)
    return below_top - torch.log(torch.exp(below_top).sum(dim=-1, keepdim=True))
