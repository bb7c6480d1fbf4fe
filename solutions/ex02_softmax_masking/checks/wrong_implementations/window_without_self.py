# Counts the window from the token before the query: a query no longer sees itself unless it is a sink.
# caught by a visible test
# cause: mask_window_off
# %% patch: sink_window_mask
-    recent = distance < window
+    recent = (distance > 0) & (distance <= window)
