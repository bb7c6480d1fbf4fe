# Scores divided by the square root of the fused width 3 * d_out (qkv.out_features) instead of d_k = d_out.
# caught by a visible test
# %% patch: causal_attention
-        _, weights = scaled_dot_product_attention(queries, keys, values, mask=allowed)
+        scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.qkv.out_features)
+        scores = scores.masked_fill(~allowed, float("-inf"))
+        weights = torch.softmax(scores, dim=-1)
