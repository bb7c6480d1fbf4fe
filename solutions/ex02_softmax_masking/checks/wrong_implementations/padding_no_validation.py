# No check of the lengths: a length above max_len or below 0 gives a silently wrong mask instead of a ValueError.
# caught by a visible test
# %% cell: padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(max_len)
    return positions[None, :] < lengths[:, None]
