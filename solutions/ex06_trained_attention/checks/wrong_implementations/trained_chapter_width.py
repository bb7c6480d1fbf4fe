# train_copy_back_model keeps chapter 8's width and heads, AttentionOnlyModel(V, 32, 2, 1, T), with few enough steps: past the budget of parameters.
# caught by a visible test
# cause: over_parameter_budget
# %% patch: train_copy_back_model
-    model = AttentionOnlyModel(vocab_size, d_model=16, num_heads=1, num_layers=1, context_len=context_len)
+    model = AttentionOnlyModel(vocab_size, d_model=32, num_heads=2, num_layers=1, context_len=context_len)
