# Keeps keys 0 to sinks inclusive: one sink too many.
# caught by a visible test
# cause: mask_sink_too_many
# %% patch: sink_window_mask
-    first = key_at < sinks
+    first = key_at <= sinks
