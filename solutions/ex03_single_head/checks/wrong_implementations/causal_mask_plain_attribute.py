# The causal mask is a plain attribute, not a registered buffer: it does not move with .to(device) and is not part of the state.
# caught by a visible test
# %% patch: causal_attention
-        self.register_buffer("causal_mask", lower)                    # (context_len, context_len), True = may attend
+        self.causal_mask = lower
