# Chapter 7's apply_rope (cell 42), called at the offset positions L, L + 1, ... after the cache (as cell 44 calls it at shifted positions), with a causal mask that compares those positions with the key positions.
# %% cell: rope_decode_step
def apply_rope(x, positions=None, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    if d % 2 != 0:
        raise ValueError(
            f"the feature dimension d={d} must be even: RoPE rotates pairs")
    if positions is None:
        positions = torch.arange(T)
    positions = torch.as_tensor(positions, dtype=torch.float64)  # (T,)
    i2 = torch.arange(0, d, 2, dtype=torch.float64)              # (d/2,) = 2i
    angles = positions[:, None] * base ** (-i2 / d)              # (T, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]     # (..., T, d/2) each
    out = torch.empty_like(x)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out


def rope_decode_step(q, k, v, k_cache, v_cache, cache_lengths, base=10000.0):
    L, T_new, d = k_cache.shape[-2], q.shape[-2], q.shape[-1]
    positions = torch.arange(L, L + T_new)  # the new tokens, after the cache
    keys = torch.cat([k_cache, apply_rope(k, positions, base)], dim=-2)
    values = torch.cat([v_cache, v], dim=-2)
    scores = apply_rope(q, positions, base) @ keys.transpose(-2, -1) / math.sqrt(d)
    scores = scores.masked_fill(torch.arange(L + T_new)[None, :] > positions[:, None], float("-inf"))
    return torch.softmax(scores, dim=-1) @ values, keys, values
