# train_copy_back_model ignores the task it is given and trains on chapter 8's previous-token task: right for k = 1 only.
# caught by a visible test
# cause: does_not_learn_task
# %% patch: train_copy_back_model
-    train(model, task, steps=90, lr=1.5e-2, seed=seed, batch_size=16, eval_every=90)
+    train(model, make_previous_token_task(vocab_size, context_len), steps=90, lr=1.5e-2, seed=seed, batch_size=16,
+          eval_every=90)
