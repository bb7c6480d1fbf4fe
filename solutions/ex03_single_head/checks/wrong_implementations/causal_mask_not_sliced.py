# The whole (context_len, context_len) mask is used instead of its (T, T) corner: fails whenever T < context_len.
# caught by a visible test
# %% patch: causal_attention
-        allowed = self.causal_mask[:n_tokens, :n_tokens]                        # (T, T)
+        allowed = self.causal_mask
