# key_padding_mask read with the course's earlier convention (True = may attend): the real keys are hidden and the padding attended to.
# caught by a visible test
# cause: padding_inverted
# %% patch: multihead_cross_attention
-        padding = None if key_padding_mask is None else key_padding_mask.view(n_batch, 1, 1, n_keys)
+        padding = None if key_padding_mask is None else ~key_padding_mask.view(n_batch, 1, 1, n_keys)
