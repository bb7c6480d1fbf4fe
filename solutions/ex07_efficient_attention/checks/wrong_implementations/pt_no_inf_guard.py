# Measures from the running maximum without a guard, as the chapter's tiled attention does: after a tile of nothing but padding (left padding) exp(-inf + inf) is NaN.
# caught by a visible test
# cause: flash_nan_no_keys
# %% patch: padded_tiled_attention
-            base = torch.where(new_max == float("-inf"), 0.0, new_max)  # all padding so far: measure from 0
+            base = new_max
