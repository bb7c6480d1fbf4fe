# min_length is never checked: min_length above T, or below 0, gives a task instead of a ValueError (the one above T fails only when a batch is drawn).
# cause: no_validation
# %% patch: make_copy_back_task
-    if not 0 <= min_length <= T:
-        raise ValueError(f"min_length={min_length} must be from 0 to T={T}")
+    pass
