# The keys and values are reshaped with the length of the queries (B, T from query.shape): breaks cross-attention whenever Tq != Tk.
# %% cell: multi_head_attention
class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_o = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, T, D = query.shape
        H, d = self.num_heads, self.head_dim
        q = self.W_q(query).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(key).view(B, T, H, d).transpose(1, 2)
        v = self.W_v(value).view(B, T, H, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / d**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)
        return self.W_o(out), weights
