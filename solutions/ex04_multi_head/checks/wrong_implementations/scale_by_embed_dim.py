# Scores divided by sqrt(embed_dim) instead of sqrt(d), the width of one head.
# caught by a visible test
# cause: scaled_by_embed_dim
# %% patch: multihead_cross_attention
-        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(head_width)   # (B, H, Tq, Tk [+ 1])
+        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.embed_dim)
