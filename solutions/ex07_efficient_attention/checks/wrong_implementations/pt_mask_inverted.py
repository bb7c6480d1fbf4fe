# Reads True in the padding mask as "may attend", as a boolean attn_mask of F.scaled_dot_product_attention means, and so attends to the padding only.
# caught by a visible test
# cause: flash_padding_inverted
# %% patch: padded_tiled_attention
-    ignored = key_padding_mask[:, None, None, :]                   # (B, 1, 1, Tk): broadcasts over heads, queries
+    ignored = ~key_padding_mask[:, None, None, :]
