# The evaluation set is drawn from the training batches' generator instead of a generator of its own.
# caught by a visible test
# cause: eval_from_training_generator
# %% patch: train_until
-    held_out = task(torch.Generator().manual_seed(10_000 + seed), 500)  # sequences never trained on
+    held_out = task(train_gen, 500)
