# split_heads checks nothing: a 2-D input or an indivisible width fails inside view/unpacking with a message that names neither the shape nor the numbers.
# %% cell: split_heads
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)
