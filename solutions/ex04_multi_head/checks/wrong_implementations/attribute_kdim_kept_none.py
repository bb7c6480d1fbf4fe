# kdim and vdim are kept as given, None by default, where nn.MultiheadAttention's attributes hold embed_dim.
# caught by a visible test
# cause: attribute_kept_none
# %% patch: multihead_weights
-        self.kdim = embed_dim if kdim is None else kdim
-        self.vdim = embed_dim if vdim is None else vdim
+        self.kdim, self.vdim = kdim, vdim
+        kdim, vdim = (embed_dim if kdim is None else kdim), (embed_dim if vdim is None else vdim)

-        self.stacked = self.kdim == embed_dim and self.vdim == embed_dim
+        self.stacked = kdim == embed_dim and vdim == embed_dim

-            self.k_proj_weight = nn.Parameter(torch.empty(embed_dim, self.kdim))
-            self.v_proj_weight = nn.Parameter(torch.empty(embed_dim, self.vdim))
+            self.k_proj_weight = nn.Parameter(torch.empty(embed_dim, kdim))
+            self.v_proj_weight = nn.Parameter(torch.empty(embed_dim, vdim))
