# split_heads checks nothing: a 2-D input or an indivisible width fails inside view/unpacking with a message that names neither the shape nor the numbers.
# caught by a visible test
# %% patch: split_heads
-    if x.dim() != 3:
-        raise ValueError(f"split_heads expected a tensor of shape (B, T, D), got shape {tuple(x.shape)}")
     B, T, D = x.shape
-    if D % num_heads != 0:
-        raise ValueError(f"D={D} is not divisible by num_heads={num_heads}")
