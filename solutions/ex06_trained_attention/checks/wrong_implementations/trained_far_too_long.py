# train_copy_back_model trains a wide model of 4 heads for 4000 steps "to be safe": far past the CPU-time budget.
# caught by a visible test
# %% patch: train_copy_back_model
-    model = AttentionOnlyModel(vocab_size, d_model=16, num_heads=1, num_layers=1, context_len=context_len)
-    train(model, task, steps=150, lr=1e-2, seed=seed, eval_every=150)  # one head can find the position k back
+    model = AttentionOnlyModel(vocab_size, d_model=64, num_heads=4, num_layers=1, context_len=context_len)
+    train(model, task, steps=4000, lr=1e-2, seed=seed, eval_every=4000)
