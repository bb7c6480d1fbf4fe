# train_copy_back_model trains for 30 steps at lr=1e-3: the model has barely started to learn when training stops.
# caught by a visible test
# %% patch: train_copy_back_model
-    train(model, task, steps=150, lr=1e-2, seed=seed, eval_every=150)  # one head can find the position k back
+    train(model, task, steps=30, lr=1e-3, seed=seed, eval_every=30)
