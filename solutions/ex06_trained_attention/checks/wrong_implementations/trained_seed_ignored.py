# train_previous_token_model trains with seed=0, copied from chapter 8, instead of the seed it is given: every seed gives the same model.
# caught by a visible test
# %% patch: train_previous_token_model
-    train(model, task, steps=150, lr=3e-3, seed=seed)  # one layer: the answer is one position back
+    train(model, task, steps=150, lr=3e-3, seed=0)
