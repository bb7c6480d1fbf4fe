# train_until stops as chapter 8's train does, with the weights of its last step: a run that never reaches the target does not hand back its best model.
# caught by a visible test
# cause: final_weights
# %% patch: train_until
-            model.load_state_dict(kept)  # the best model measured, not the last
+            pass
