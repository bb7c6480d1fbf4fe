# SelfAttention takes its queries from W_k and its keys from W_q: the scores come out transposed, k q^T.
# caught by a visible test
# %% patch: self_attention
-        queries = self.W_q(x)   # (..., T, d_out)
-        keys = self.W_k(x)      # (..., T, d_out)
+        queries = self.W_k(x)
+        keys = self.W_q(x)
