# The mask is causal but lets the new tokens see the padding rows of the shorter caches.
# caught by a visible test
# cause: cache_reads_padding
# %% patch: rope_decode_step
-    allowed = real & (row <= L + torch.arange(T_new)[:, None])     # (B, T_new, L + T_new): and not later
+    allowed = (row <= L + torch.arange(T_new)[:, None]).expand(B, T_new, L + T_new)
