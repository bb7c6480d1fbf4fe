# Stacks the weights only when kdim and vdim are left out (None), not when they are given equal to embed_dim, as nn.MultiheadAttention does.
# caught by a visible test
# cause: stacked_only_when_omitted
# %% patch: multihead_weights
-        self.stacked = self.kdim == embed_dim and self.vdim == embed_dim
+        self.stacked = kdim is None and vdim is None
