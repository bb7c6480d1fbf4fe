# k.T instead of k.transpose(-2, -1): on a batched tensor .T reverses every dimension, not just the last two.
# %% cell: sdpa
def scaled_dot_product_attention(q, k, v, mask=None):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same width, got q.shape={tuple(q.shape)} and k.shape={tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same length, got k.shape={tuple(k.shape)} and v.shape={tuple(v.shape)}")
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
    return weights @ v, weights
