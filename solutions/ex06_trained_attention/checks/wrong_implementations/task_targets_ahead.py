# The targets are shifted the wrong way, like a language model's: position t is asked for the token k places ahead, which it has not seen.
# caught by a visible test
# cause: targets_shifted
# %% patch: make_copy_back_task
-        targets[:, k:] = tokens[:, : T - k]  # targets[:, t] = tokens[:, t - k]
+        targets[:, : T - k] = tokens[:, k:]  # targets[:, t] = tokens[:, t + k]
