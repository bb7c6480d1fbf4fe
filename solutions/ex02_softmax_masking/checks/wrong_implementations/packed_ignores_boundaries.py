# A causal mask over the whole packed row: tokens attend across sequence boundaries.
# caught by a visible test
# %% patch: packed_causal_mask
-    return same_sequence & not_ahead
+    return not_ahead
