# Only k < 1 is refused: k = T or more gives a task where no position counts, instead of a ValueError.
# caught by a visible test
# cause: no_validation
# %% patch: make_copy_back_task
-    if not 1 <= k < T:
+    if k < 1:
