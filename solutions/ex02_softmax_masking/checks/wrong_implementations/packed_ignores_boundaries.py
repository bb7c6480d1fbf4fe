# A causal mask over the whole packed row: tokens attend across sequence boundaries.
# caught by a visible test
# cause: mask_crosses_sequences
# %% patch: packed_causal_mask
-    return same_sequence & not_ahead
+    return not_ahead
