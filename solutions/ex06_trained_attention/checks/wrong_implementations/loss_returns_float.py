# The loss is returned as a Python number (loss.item()), which train cannot backpropagate.
# caught by a visible test
# %% patch: loss_and_accuracy
-    return loss, correct.double().mean()
+    return loss.item(), correct.double().mean()
