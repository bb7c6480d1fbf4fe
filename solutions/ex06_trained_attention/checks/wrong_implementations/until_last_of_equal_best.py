# train_until keeps the last of the evaluations that share the best accuracy, not the first.
# caught by a visible test
# cause: final_weights
# %% patch: train_until
-            if best is None or history["accuracy"][-1] > best:  # strictly better: the first of equals stays
+            if best is None or history["accuracy"][-1] >= best:
