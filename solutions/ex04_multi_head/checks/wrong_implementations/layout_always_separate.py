# Always stores three separate q/k/v_proj_weight matrices, even when kdim and vdim equal embed_dim, where nn.MultiheadAttention stacks them into in_proj_weight.
# caught by a visible test
# cause: never_stacked
# %% patch: multihead_weights
-        self.stacked = self.kdim == embed_dim and self.vdim == embed_dim
+        self.stacked = False
