# Padding mask that is True for the padding (the key_padding_mask convention of nn.MultiheadAttention).
# caught by a visible test
# %% cell: padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)
    if (lengths < 0).any() or (lengths > max_len).any():
        raise ValueError(f"lengths must lie between 0 and max_len={max_len}; got {lengths.tolist()}")
    positions = torch.arange(max_len)
    return positions[None, :] >= lengths[:, None]
