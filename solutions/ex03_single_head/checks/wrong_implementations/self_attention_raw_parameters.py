# Raw nn.Parameter matrices (d_in, d_out) instead of nn.Linear layers: no in/out features, no bias option.
# caught by a visible test
# %% patch: self_attention
-        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)   # weight (d_out, d_in)
-        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)   # weight (d_out, d_in)
-        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)   # weight (d_out, d_in)
+        self.W_q = nn.Parameter(torch.rand(d_in, d_out))
+        self.W_k = nn.Parameter(torch.rand(d_in, d_out))
+        self.W_v = nn.Parameter(torch.rand(d_in, d_out))

-        queries = self.W_q(x)   # (..., T, d_out)
-        keys = self.W_k(x)      # (..., T, d_out)
-        values = self.W_v(x)    # (..., T, d_out)
+        queries = x @ self.W_q
+        keys = x @ self.W_k
+        values = x @ self.W_v
