# train_copy_back_model keeps chapter 8's learning rate, 1e-3, for the few steps the budget allows: the model has barely started to learn when training stops.
# caught by a visible test
# cause: does_not_learn_task
# %% patch: train_copy_back_model
-    train(model, task, steps=90, lr=1.5e-2, seed=seed, batch_size=16, eval_every=90)
+    train(model, task, steps=90, lr=1e-3, seed=seed, batch_size=16, eval_every=90)
