# The (B, Tk) padding mask gets its new axis at the end, (B, Tk, 1), as if it flagged queries: it no longer fits the (B, Tq, Tk) scores.
# caught by a visible test
# cause: raised
# %% patch: cross_attention
-            hidden = key_padding_mask.unsqueeze(-2)                     # (..., 1, Tk): the same for every query
+            hidden = key_padding_mask.unsqueeze(-1)
