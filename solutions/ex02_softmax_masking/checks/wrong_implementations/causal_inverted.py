# Causal mask in the "True = blocked" convention (triu with diagonal=1), as nn.MultiheadAttention expects.
# caught by a visible test
# %% cell: causal_mask
def causal_mask(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
