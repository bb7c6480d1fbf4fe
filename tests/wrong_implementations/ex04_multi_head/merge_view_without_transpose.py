# merge_heads views (B, H, T, d) straight back to (B, T, H*d), without moving the head axis first.
# %% cell: merge_heads
def merge_heads(x):
    B, H, T, d = x.shape
    return x.contiguous().view(B, T, H * d)
