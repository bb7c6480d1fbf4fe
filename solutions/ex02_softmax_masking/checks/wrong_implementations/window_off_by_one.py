# Lets the window reach window positions back from the query, one more than the window holds (it counts the query itself).
# caught by a visible test
# cause: mask_window_too_wide
# %% patch: sink_window_mask
-    recent = distance < window
+    recent = distance <= window
