# "Tiled" attention that computes the whole (Tq, Tk) score matrix and then softmaxes it block by block: the matrix it was meant to avoid is there.
# caught by a visible test
# %% cell: tiled_attention
def tiled_attention(q, k, v, block_size, causal=False):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])     # (..., Tq, Tk)
    if causal:
        T = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(diagonal=1), float("-inf"))
    outputs = []
    for i0 in range(0, q.shape[-2], block_size):
        weights = torch.softmax(scores[..., i0:i0 + block_size, :], dim=-1)
        outputs.append(weights @ v)
    return torch.cat(outputs, dim=-2)
