# True where attention is forbidden: the opposite of the course's convention.
# caught by a visible test
# cause: mask_blocks_allowed
# %% patch: packed_causal_mask
-    return same_sequence & not_ahead
+    return ~(same_sequence & not_ahead)
