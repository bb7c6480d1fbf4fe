# Cuts the projected (B, T, E) tensor straight into (B, H, T, d) with a reshape: each "head" then holds pieces of several tokens.
# caught by a visible test
# cause: heads_cut_wrong
# %% patch: multihead_cross_attention
-            return F.linear(x, weight, b).reshape(n_batch, length, heads, head_width).permute(0, 2, 1, 3)
+            return F.linear(x, weight, b).reshape(n_batch, heads, length, head_width)
