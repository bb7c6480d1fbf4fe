# add_zero_attn appends a zero row to key and value before the projections: projected, the zero key is the key bias and the zero value the value bias.
# caught by a visible test
# cause: zero_attn_before_projection
# %% patch: multihead_cross_attention
+        if self.add_zero_attn:
+            key = torch.cat([key, key.new_zeros(n_batch, 1, key.shape[-1])], dim=1)
+            value = torch.cat([value, value.new_zeros(n_batch, 1, value.shape[-1])], dim=1)
+            if key_padding_mask is not None:
+                key_padding_mask = torch.cat([key_padding_mask, key_padding_mask.new_zeros(n_batch, 1)], dim=1)
+            n_keys += 1
         q = by_head(query, w_q, b_q, n_queries)                         # (B, H, Tq, d)

-        if self.add_zero_attn:  # zeros after the projections (its biases included): a key that scores 0 everywhere
+        if False:
