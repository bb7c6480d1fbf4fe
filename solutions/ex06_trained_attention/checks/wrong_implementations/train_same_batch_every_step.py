# A new generator with the same seed is made at every step, so every step trains on the same batch.
# caught by a visible test
# %% patch: train
-        loss, _ = loss_and_accuracy(model, task(batches, batch_size))
+        loss, _ = loss_and_accuracy(model, task(torch.Generator().manual_seed(seed), batch_size))
