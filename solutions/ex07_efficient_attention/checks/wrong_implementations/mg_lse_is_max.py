# Weighs the outputs rightly but returns the larger lse as the merged one, forgetting the smaller part's sum.
# caught by a visible test
# cause: merge_lse_is_max
# %% patch: merge_partials
-    lse = top + torch.log(total)                                   # -inf where both parts are empty
+    lse = torch.maximum(lse_a, lse_b)
