# train_copy_back_model always trains with seed 0: every seed gives the same model.
# %% patch: train_copy_back_model
-    train(model, task, steps=150, lr=1e-2, seed=seed, eval_every=150)  # one head can find the position k back
+    train(model, task, steps=150, lr=1e-2, seed=0, eval_every=150)
