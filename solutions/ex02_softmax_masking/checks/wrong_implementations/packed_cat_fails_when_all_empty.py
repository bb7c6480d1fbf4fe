# Builds the sequence number of every token with torch.cat over the non-empty sequences only: torch.cat of an empty list raises when every sequence is empty.
# caught by a visible test
# cause: empty_sequences
# %% cell: packed_causal_mask
def packed_causal_mask(lengths):
    if isinstance(lengths, torch.Tensor) and (lengths.dtype == torch.bool or lengths.is_floating_point()):
        raise TypeError(f"lengths must be integers, got a tensor of dtype {lengths.dtype}")
    lengths = [int(n) for n in lengths]
    for s, n in enumerate(lengths):
        if n < 0:
            raise ValueError(f"lengths must be 0 or more; sequence {s} has length {n}")
    owner = torch.cat([torch.full((n,), s) for s, n in enumerate(lengths) if n > 0])   # (T,)
    T = len(owner)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return causal & (owner[:, None] == owner[None, :])
