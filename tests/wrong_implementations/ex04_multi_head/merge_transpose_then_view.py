# merge_heads transposes and then calls view without .contiguous(): raises a RuntimeError on the layout attention produces.
# %% cell: merge_heads
def merge_heads(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).view(B, T, H * d)
