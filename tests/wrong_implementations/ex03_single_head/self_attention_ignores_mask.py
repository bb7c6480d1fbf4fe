# SelfAttention.forward accepts a mask but never passes it on: every query still sees every key.
# %% cell: self_attention
class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_in = d_in
        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x, mask=None):
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_in:
            raise ValueError(f"expected x of shape (T, {self.d_in}) or (B, T, {self.d_in}), got {tuple(x.shape)}")
        return scaled_dot_product_attention(self.W_q(x), self.W_k(x), self.W_v(x))
