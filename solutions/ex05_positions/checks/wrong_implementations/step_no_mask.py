# No causal mask among the new tokens (the padding is still hidden): with several new tokens, each sees the new tokens after it (harmless only when one token is added at a time).
# caught by a visible test
# cause: cache_not_causal
# %% patch: rope_decode_step
-    allowed = real & (row <= L + torch.arange(T_new)[:, None])     # (B, T_new, L + T_new): and not later
+    allowed = real.expand(B, T_new, L + T_new)
