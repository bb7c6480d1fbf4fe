# train_copy_back_model always trains with seed 0: every seed gives the same model.
# cause: seed_ignored
# %% patch: train_copy_back_model
-    train(model, task, steps=60, lr=2e-2, seed=seed, batch_size=16, eval_every=60)
+    train(model, task, steps=60, lr=2e-2, seed=0, batch_size=16, eval_every=60)
