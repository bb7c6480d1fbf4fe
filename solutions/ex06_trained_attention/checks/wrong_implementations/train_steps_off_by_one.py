# The loop runs over range(steps): the last evaluation, after the final step, never happens (and the function returns None).
# caught by a visible test
# %% patch: train
-    for step in range(steps + 1):
+    for step in range(steps):

-        optimizer.step()
+        optimizer.step()
+    return history
