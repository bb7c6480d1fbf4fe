# The fused output is split as keys, queries, values instead of queries, keys, values.
# caught by a visible test
# %% patch: causal_attention
-        queries, keys, values = torch.split(self.qkv(x), self.d_out, dim=-1)   # each (..., T, d_out)
+        keys, queries, values = torch.split(self.qkv(x), self.d_out, dim=-1)
