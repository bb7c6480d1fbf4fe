# Assumes lengths is a tensor: a Python list of lengths fails.
# caught by a visible test
# %% cell: padding_mask
def padding_mask(lengths, max_len):
    if (lengths < 0).any() or (lengths > max_len).any():
        raise ValueError(f"lengths must lie between 0 and max_len={max_len}; got {lengths.tolist()}")
    positions = torch.arange(max_len)
    return positions[None, :] < lengths[:, None]
