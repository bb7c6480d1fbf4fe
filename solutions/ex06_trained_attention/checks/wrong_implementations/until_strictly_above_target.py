# Training stops only when the accuracy is above the target, not when it equals it.
# caught by a visible test
# cause: stops_only_above_target
# %% patch: train_until
-            if history["accuracy"][-1] >= target:
+            if history["accuracy"][-1] > target:
