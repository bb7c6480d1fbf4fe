# train_copy_back_model always trains with seed 0: every seed gives the same model.
# cause: seed_ignored
# %% patch: train_copy_back_model
-    train(model, task, steps=90, lr=1.5e-2, seed=seed, batch_size=16, eval_every=90)
+    train(model, task, steps=90, lr=1.5e-2, seed=0, batch_size=16, eval_every=90)
