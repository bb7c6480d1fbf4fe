# Dropout with F.dropout(weights, p), whose training argument defaults to True: it still drops in eval() mode.
# %% cell: causal_attention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_in, d_out, context_len, dropout=0.0, qkv_bias=False):
        super().__init__()
        self.d_in, self.d_out, self.context_len = d_in, d_out, context_len
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("causal_mask", torch.tril(torch.ones(context_len, context_len, dtype=torch.bool)))

    def forward(self, x):
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_in:
            raise ValueError(f"expected x of shape (T, {self.d_in}) or (B, T, {self.d_in}), got {tuple(x.shape)}")
        T = x.shape[-2]
        if T > self.context_len:
            raise ValueError(f"sequence length T={T} exceeds context_len={self.context_len}")
        q, k, v = self.qkv(x).split(self.d_out, dim=-1)
        _, weights = scaled_dot_product_attention(q, k, v, mask=self.causal_mask[:T, :T])
        weights = F.dropout(weights, self.dropout.p)
        return weights @ v, weights
