# The causal mask is stored as an nn.Parameter (requires_grad=False) instead of a buffer: it shows up among the trainable parameters.
# caught by a visible test
# %% patch: causal_attention
-        self.register_buffer("causal_mask", lower)                    # (context_len, context_len), True = may attend
+        self.causal_mask = nn.Parameter(lower, requires_grad=False)
