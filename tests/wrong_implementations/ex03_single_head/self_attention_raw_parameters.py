# Raw nn.Parameter matrices (d_in, d_out) instead of nn.Linear layers: no in/out features, no bias option.
# %% cell: self_attention
class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_in = d_in
        self.W_q = nn.Parameter(torch.rand(d_in, d_out))
        self.W_k = nn.Parameter(torch.rand(d_in, d_out))
        self.W_v = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x, mask=None):
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_in:
            raise ValueError(f"expected x of shape (T, {self.d_in}) or (B, T, {self.d_in}), got {tuple(x.shape)}")
        return scaled_dot_product_attention(x @ self.W_q, x @ self.W_k, x @ self.W_v, mask=mask)
