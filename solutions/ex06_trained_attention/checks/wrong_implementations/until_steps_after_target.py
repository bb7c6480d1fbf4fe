# The target is checked after the training step: one more step is taken after the evaluation that reached it.
# caught by a visible test
# %% patch: train_until
-            if history["accuracy"][-1] >= target:
-                return history  # good enough: no step after the evaluation that reached the target
-        if step == max_steps:
+        if step == max_steps or (history["accuracy"] and history["accuracy"][-1] >= target and step > 0):
