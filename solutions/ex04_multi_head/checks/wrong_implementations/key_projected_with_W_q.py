# Copy-paste slip: the keys are projected with W_q instead of W_k.
# caught by a visible test
# %% patch: multi_head_attention
-        k = split_heads(self.W_k(key), self.num_heads)  # (B, H, Tk, d)
+        k = split_heads(self.W_q(key), self.num_heads)  # (B, H, Tk, d)
