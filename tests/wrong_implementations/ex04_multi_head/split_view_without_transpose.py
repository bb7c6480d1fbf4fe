# Heads split with x.view(B, H, T, d) and merged with the mirror-image view: right shapes, a round trip that works, wrong contents.
# %% cell: split_heads
def split_heads(x, num_heads):
    if x.dim() != 3:
        raise ValueError(f"expected (B, T, D), got shape {tuple(x.shape)}")
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D={D} is not divisible by num_heads={num_heads}")
    return x.view(B, num_heads, T, D // num_heads)
# %% cell: merge_heads
def merge_heads(x):
    B, H, T, d = x.shape
    return x.reshape(B, T, H * d)
