# Heads folded into the batch as (B*H, ...), but the mask copied with repeat (head-major order): sequence b, head h gets another sequence's mask whenever B > 1 and H > 1.
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
        B, Tq, D = query.shape
        Tk = key.shape[1]
        H, d = self.num_heads, self.head_dim
        q = split_heads(self.W_q(query), H).reshape(B * H, Tq, d)
        k = split_heads(self.W_k(key), H).reshape(B * H, Tk, d)
        v = split_heads(self.W_v(value), H).reshape(B * H, Tk, d)
        scores = torch.bmm(q, k.transpose(1, 2)) / d**0.5  # (B*H, Tq, Tk)
        if mask is not None:
            mask = mask.expand(B, 1, Tq, Tk).reshape(B, Tq, Tk).repeat(H, 1, 1)  # (B*H, Tq, Tk)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        heads = torch.bmm(weights, v).reshape(B, H, Tq, d)
        return self.W_o(merge_heads(heads)), weights.reshape(B, H, Tq, Tk)
