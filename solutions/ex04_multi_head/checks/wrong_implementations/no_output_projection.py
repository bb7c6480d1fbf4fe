# W_o is created but never applied: forward returns the concatenated heads.
# caught by a visible test
# %% patch: multi_head_attention
-        out = self.W_o(merge_heads(weights @ v))  # (B, Tq, D)
+        out = merge_heads(weights @ v)  # (B, Tq, D)
