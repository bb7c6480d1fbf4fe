# forward merges the heads itself with a reshape of (B, H, T, d) straight to (B, T, D), with no transpose: tokens and heads get mixed.
# caught by a visible test
# %% patch: multi_head_attention
-        out = self.W_o(merge_heads(weights @ v))  # (B, Tq, D)
+        heads = weights @ v  # (B, H, Tq, d)
+        out = self.W_o(heads.reshape(heads.shape[0], heads.shape[2], -1))
