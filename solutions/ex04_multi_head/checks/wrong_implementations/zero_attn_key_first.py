# add_zero_attn puts the zero key and value first, before the real keys: every weight lands one key to the right of PyTorch's.
# caught by a visible test
# cause: zero_attn_first
# %% patch: multihead_cross_attention
-            k, v = torch.cat([k, zero], dim=2), torch.cat([v, zero], dim=2)    # (B, H, Tk + 1, d)
+            k, v = torch.cat([zero, k], dim=2), torch.cat([zero, v], dim=2)    # (B, H, Tk + 1, d)

-                padding = torch.cat([padding, padding.new_zeros(n_batch, 1, 1, 1)], dim=-1)
+                padding = torch.cat([padding.new_zeros(n_batch, 1, 1, 1), padding], dim=-1)
