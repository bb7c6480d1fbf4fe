# The causal mask is tril(diagonal=-1): a position may not attend to itself, and position 0 gets no weights at all.
# caught by a visible test
# %% patch: attention_only_model
-        causal = torch.ones(context_len, context_len, dtype=torch.bool).tril()
+        causal = torch.ones(context_len, context_len, dtype=torch.bool).tril(diagonal=-1)
