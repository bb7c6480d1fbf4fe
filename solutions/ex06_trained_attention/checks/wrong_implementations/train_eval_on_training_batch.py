# The history measures the loss and accuracy on the batch the model has just been trained on, not on a fixed evaluation set.
# caught by a visible test
# %% patch: train
-    eval_set = task(torch.Generator().manual_seed(10_000 + seed), 500)
+    batch = task(batches, batch_size)

-                loss, acc = loss_and_accuracy(model, eval_set)
+                loss, acc = loss_and_accuracy(model, batch)

-        loss, _ = loss_and_accuracy(model, task(batches, batch_size))
+        batch = task(batches, batch_size)
+        loss, _ = loss_and_accuracy(model, batch)
