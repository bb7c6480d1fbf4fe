# The layers are built as [MultiHeadAttention(...)] * num_layers: one layer repeated, so all layers share one set of weights.
# caught by a visible test
# %% patch: attention_only_model
-        self.layers = nn.ModuleList(
-            MultiHeadAttention(d_model, num_heads, bias=False) for _ in range(num_layers)
-        )
+        self.layers = nn.ModuleList([MultiHeadAttention(d_model, num_heads, bias=False)] * num_layers)
