# Adds the sinks after applying the causal rule (& binds tighter than |): an early query sees sinks that come after it.
# caught by a visible test
# cause: mask_reads_ahead
# %% patch: sink_window_mask
-    return (distance >= 0) & (recent | first)
+    return (distance >= 0) & recent | first
