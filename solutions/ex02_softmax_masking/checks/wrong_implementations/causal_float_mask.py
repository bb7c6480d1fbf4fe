# Causal mask of float 0s and 1s instead of booleans: attention would add it to the scores.
# caught by a visible test
# %% cell: causal_mask
def causal_mask(n):
    return torch.tril(torch.ones(n, n))
