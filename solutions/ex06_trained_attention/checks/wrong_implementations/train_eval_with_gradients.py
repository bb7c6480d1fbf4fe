# train evaluates the model with gradients on (no torch.no_grad()): the history's numbers are right, but every evaluation records a graph for a backward pass that never comes.
# caught by a visible test
# %% patch: train
-            with torch.no_grad():
-                loss, acc = loss_and_accuracy(model, eval_set)
+            loss, acc = loss_and_accuracy(model, eval_set)
