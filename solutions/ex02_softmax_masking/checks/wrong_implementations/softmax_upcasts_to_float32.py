# Converts to float32 "to be safe" and returns float32 whatever the input dtype (float16 and float64 change type).
# caught by a visible test
# %% cell: stable_softmax
def stable_softmax(x, dim=-1):
    x = x.float()
    exps = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)
