# Makes the mask as wide as the longest sequence instead of max_len.
# caught by a visible test
# %% cell: padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)
    if (lengths < 0).any() or (lengths > max_len).any():
        raise ValueError(f"lengths must lie between 0 and max_len={max_len}; got {lengths.tolist()}")
    positions = torch.arange(int(lengths.max()))
    return positions[None, :] < lengths[:, None]
