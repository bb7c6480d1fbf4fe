# SelfAttention averages the keys instead of the values: W_v is created but never used.
# caught by a visible test
# %% patch: self_attention
-        return scaled_dot_product_attention(queries, keys, values, mask=mask)
+        return scaled_dot_product_attention(queries, keys, keys, mask=mask)
