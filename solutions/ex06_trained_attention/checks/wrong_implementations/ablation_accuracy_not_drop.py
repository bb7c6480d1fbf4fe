# ablation_drops returns the accuracy without each head, not how far it falls from the whole model's.
# caught by a visible test
# cause: drop_definition
# %% patch: ablation
-                    drops[i, h] = whole - loss_and_accuracy(model, batch)[1].item()
+                    drops[i, h] = loss_and_accuracy(model, batch)[1].item()
