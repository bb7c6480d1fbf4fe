# Chapter 9's tiled_attention with the padding mask accepted and ignored: padding keys get weight, and a query without any key gets an average.
# cause: flash_no_keys_not_zero
# %% cell: padded_tiled_attention
def padded_tiled_attention(q, k, v, key_padding_mask, block_size, causal=False):
    Tq, Tk = q.shape[-2], k.shape[-2]
    out = q.new_empty(*q.shape[:-1], v.shape[-1])       # (..., Tq, d_v)
    for i0 in range(0, Tq, block_size):
        qb = q[..., i0:i0 + block_size, :] / math.sqrt(q.shape[-1])
        rows = qb.shape[:-1]                             # (..., bq)
        m = q.new_full((*rows, 1), float("-inf"))        # (..., bq, 1)
        l = q.new_zeros((*rows, 1))                      # (..., bq, 1)
        o = q.new_zeros((*rows, v.shape[-1]))            # (..., bq, d_v)
        end = min(Tk, i0 + block_size) if causal else Tk
        for j0 in range(0, end, block_size):
            kb = k[..., j0:j0 + block_size, :]           # (..., bk, d_k)
            s = qb @ kb.transpose(-2, -1)                # (..., bq, bk) tile
            if causal and j0 + s.shape[-1] > i0 + 1:     # crosses the diagonal
                i = torch.arange(i0, i0 + s.shape[-2])[:, None]  # (bq, 1)
                j = torch.arange(j0, j0 + s.shape[-1])[None, :]  # (1, bk)
                s = s.masked_fill(j > i, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)                     # (..., bq, bk)
            rescale = torch.exp(m - m_new)               # (..., bq, 1)
            l = l * rescale + p.sum(dim=-1, keepdim=True)
            o = o * rescale + p @ v[..., j0:j0 + block_size, :]
            m = m_new
        out[..., i0:i0 + block_size, :] = o / l
    return out
