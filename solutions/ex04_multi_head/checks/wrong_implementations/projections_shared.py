# Chained assignment W_q = W_k = W_v = nn.Linear(...): one layer shared by queries, keys and values instead of three.
# caught by a visible test
# %% patch: multi_head_attention
-        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
-        self.W_k = nn.Linear(embed_dim, embed_dim, bias=bias)
-        self.W_v = nn.Linear(embed_dim, embed_dim, bias=bias)
+        self.W_q = self.W_k = self.W_v = nn.Linear(embed_dim, embed_dim, bias=bias)
