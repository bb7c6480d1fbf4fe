# SelfAttention.forward accepts a mask but never passes it on: every query still sees every key.
# caught by a visible test
# %% patch: self_attention
-        return scaled_dot_product_attention(queries, keys, values, mask=mask)
+        return scaled_dot_product_attention(queries, keys, values)
