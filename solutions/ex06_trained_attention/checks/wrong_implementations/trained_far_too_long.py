# train_copy_back_model trains a wide model of 4 heads for 1000 steps "to be safe": far past the budget of sequences and parameters.
# caught by a visible test
# cause: over_sequence_budget
# %% patch: train_copy_back_model
-    model = AttentionOnlyModel(vocab_size, d_model=16, num_heads=1, num_layers=1, context_len=context_len)
-    train(model, task, steps=90, lr=1.5e-2, seed=seed, batch_size=16, eval_every=90)
+    model = AttentionOnlyModel(vocab_size, d_model=64, num_heads=4, num_layers=1, context_len=context_len)
+    train(model, task, steps=1000, lr=1e-2, seed=seed, eval_every=1000)
