# SelfAttention computes its own scores and divides them by sqrt(d_in), the input width, instead of sqrt(d_k) = sqrt(d_out).
# caught by a visible test
# %% patch: self_attention
-        return scaled_dot_product_attention(queries, keys, values, mask=mask)
+        scores = queries @ keys.transpose(-2, -1) / self.d_in ** 0.5
+        if mask is not None:
+            scores = scores.masked_fill(~mask, float("-inf"))
+        weights = torch.softmax(scores, dim=-1)
+        if mask is not None:
+            weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
+        return weights @ values, weights
