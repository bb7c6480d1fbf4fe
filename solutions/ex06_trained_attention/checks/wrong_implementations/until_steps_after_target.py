# The target is checked after the training step: one more step is taken after the evaluation that reached it.
# caught by a visible test
# cause: final_weights
# %% patch: train_until
-            if history["accuracy"][-1] >= target:
-                return history  # good enough: no step after the evaluation that reached the target
+            pass

         batch_loss.backward()
         adam.step()
+        if history["accuracy"][-1] >= target:
+            return history
