# Causal mask without the diagonal: a token may not attend to itself, and the first query sees nothing.
# caught by a visible test
# %% cell: causal_mask
def causal_mask(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)
