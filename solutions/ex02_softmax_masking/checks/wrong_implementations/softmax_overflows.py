# Textbook softmax without subtracting the maximum: exp overflows on large scores and in float16.
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    exps = torch.exp(x)
    return exps / exps.sum(dim=dim, keepdim=True)
