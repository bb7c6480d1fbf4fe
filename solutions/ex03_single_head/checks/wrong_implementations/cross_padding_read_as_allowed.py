# key_padding_mask read with chapter 5's convention (True = may attend): the real tokens are hidden and the padding attended to.
# caught by a visible test
# cause: padding_inverted
# %% patch: cross_attention
-            hidden = key_padding_mask.unsqueeze(-2)                     # (..., 1, Tk): the same for every query
+            hidden = ~key_padding_mask.unsqueeze(-2)
