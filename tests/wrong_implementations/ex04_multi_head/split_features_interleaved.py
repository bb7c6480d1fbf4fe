# Features cut as (d, H) instead of (H, d), with the matching merge: head h gets features h, h+H, h+2H, ... instead of one consecutive chunk.
# %% cell: split_heads
def split_heads(x, num_heads):
    if x.dim() != 3:
        raise ValueError(f"expected (B, T, D), got shape {tuple(x.shape)}")
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D={D} is not divisible by num_heads={num_heads}")
    return x.view(B, T, D // num_heads, num_heads).permute(0, 3, 1, 2)
# %% cell: merge_heads
def merge_heads(x):
    B, H, T, d = x.shape
    return x.permute(0, 2, 3, 1).reshape(B, T, d * H)
