# The bias argument is ignored: every projection always has a bias, even with bias=False.
# caught by a visible test
# %% patch: multi_head_attention
-        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
-        self.W_k = nn.Linear(embed_dim, embed_dim, bias=bias)
-        self.W_v = nn.Linear(embed_dim, embed_dim, bias=bias)
-        self.W_o = nn.Linear(embed_dim, embed_dim, bias=bias)
+        self.W_q = nn.Linear(embed_dim, embed_dim)
+        self.W_k = nn.Linear(embed_dim, embed_dim)
+        self.W_v = nn.Linear(embed_dim, embed_dim)
+        self.W_o = nn.Linear(embed_dim, embed_dim)
