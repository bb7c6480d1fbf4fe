# SelfAttention computes its own scores and divides them by sqrt(d_in), the input width, instead of sqrt(d_k) = sqrt(d_out).
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
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = q @ k.transpose(-2, -1) / self.d_in ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
        return weights @ v, weights
