# Chapter 6's MultiHeadAttention (cells 6, 8, 22, 26) run on the stored tensors with F.linear, PyTorch's padding mask inverted (cell 50), the weights averaged over the heads (cell 53) and zero weights for a query with no key (cell 57).
# %% cell: multihead_cross_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    S = q @ k.transpose(-2, -1)              # (..., Tq, Tk) raw scores
    logits = S / math.sqrt(d_k)              # (..., Tq, Tk) scaled scores
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)  # (..., Tq, Tk), each row sums to 1
    if mask is not None:
        # a row with no allowed key is NaN: make it 0
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
    return weights @ v, weights              # (..., Tq, d_v), (..., Tq, Tk)


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d)  # (B, T, D)


class MultiheadCrossAttention(MultiheadWeights):
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, average_attn_weights=True):
        if getattr(self, "in_proj_weight", None) is not None:
            W_q, W_k, W_v = self.in_proj_weight.chunk(3)
        else:
            W_q, W_k, W_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q, b_k, b_v = (None, None, None) if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        q = split_heads(F.linear(query, W_q, b_q), self.num_heads)  # (B, H, Tq, d_k)
        k = split_heads(F.linear(key, W_k, b_k), self.num_heads)  # (B, H, Tk, d_k)
        v = split_heads(F.linear(value, W_v, b_v), self.num_heads)  # (B, H, Tk, d_k)
        mask = None if key_padding_mask is None else ~key_padding_mask[:, None, None, :]
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        out = self.out_proj(merge_heads(heads))  # (B, Tq, D)
        if not need_weights:
            return out, None
        return out, weights.mean(dim=1) if average_attn_weights else weights
