# The causal mask is torch.tril of T_new rows and L + T_new columns: its diagonal starts in the top-left corner, so the new tokens see only the first rows.
# caught by a visible test
# cause: cache_mask_top_left
# %% patch: rope_decode_step
-    allowed = real & (row <= L + torch.arange(T_new)[:, None])     # (B, T_new, L + T_new): and not later
+    allowed = real & torch.ones(T_new, L + T_new, dtype=torch.bool).tril()
