# Keeps the sequences apart but lets every token see its whole sequence, later tokens included.
# caught by a visible test
# cause: mask_reads_ahead
# %% patch: packed_causal_mask
-    return same_sequence & not_ahead
+    return same_sequence
