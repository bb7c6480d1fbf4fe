# train_previous_token_model trains for 40 steps at lr=1e-3: the model has barely started to learn when training stops.
# caught by a visible test
# %% patch: train_previous_token_model
-    train(model, task, steps=150, lr=3e-3, seed=seed)  # one layer: the answer is one position back
+    train(model, task, steps=40, lr=1e-3, seed=seed)
