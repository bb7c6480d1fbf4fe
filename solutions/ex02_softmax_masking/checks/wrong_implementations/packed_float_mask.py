# Returns 0.0/1.0 floats: F.scaled_dot_product_attention would add them to the scores instead of blocking anything.
# caught by a visible test
# cause: mask_not_bool
# %% patch: packed_causal_mask
-    return same_sequence & not_ahead
+    return (same_sequence & not_ahead).float()
