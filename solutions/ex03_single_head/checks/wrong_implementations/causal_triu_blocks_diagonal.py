# The blocked cells are built with torch.triu including the diagonal: each query may not attend to itself.
# caught by a visible test
# %% patch: causal_attention
-        lower = torch.ones(context_len, context_len, dtype=torch.bool).tril()
-        self.register_buffer("causal_mask", lower)                    # (context_len, context_len), True = may attend
+        blocked = torch.ones(context_len, context_len, dtype=torch.bool).triu()
+        self.register_buffer("blocked", blocked)

-        allowed = self.causal_mask[:n_tokens, :n_tokens]                        # (T, T)
+        allowed = ~self.blocked[:n_tokens, :n_tokens]
