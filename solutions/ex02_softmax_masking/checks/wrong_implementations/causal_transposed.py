# Causal mask with the wrong triangle (upper): every query sees the future and not the past.
# caught by a visible test
# %% cell: causal_mask
def causal_mask(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool))
