# in_proj_bias is cut as [keys | queries | values]: the query and key biases are swapped (a fresh nn.MultiheadAttention, whose biases are zeros, cannot tell).
# caught by a visible test
# cause: bias_order
# %% patch: multihead_cross_attention
-        b_q, b_k, b_v = (None, None, None) if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
+        b_k, b_q, b_v = (None, None, None) if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
