# The projections are built with bias=False whatever qkv_bias says.
# caught by a visible test
# %% patch: self_attention
-        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)   # weight (d_out, d_in)
-        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)   # weight (d_out, d_in)
-        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)   # weight (d_out, d_in)
+        self.W_q = nn.Linear(d_in, d_out, bias=False)
+        self.W_k = nn.Linear(d_in, d_out, bias=False)
+        self.W_v = nn.Linear(d_in, d_out, bias=False)
