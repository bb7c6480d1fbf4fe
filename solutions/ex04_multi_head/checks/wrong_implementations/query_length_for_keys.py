# The keys and values are reshaped with the length of the queries (B, T from query.shape): breaks cross-attention whenever Tq != Tk.
# caught by a visible test
# %% patch: multi_head_attention
+        B, T, D = query.shape
         q = split_heads(self.W_q(query), self.num_heads)  # (B, H, Tq, d)
-        k = split_heads(self.W_k(key), self.num_heads)  # (B, H, Tk, d)
-        v = split_heads(self.W_v(value), self.num_heads)  # (B, H, Tk, d)
+        k = self.W_k(key).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
+        v = self.W_v(value).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
