# ALiBi slopes 2**(-8h/H) with h counted from 0: head 0 gets slope 1.
# caught by a visible test
# %% patch: alibi_bias
-    h = torch.arange(1, num_heads + 1, dtype=torch.float64)        # (H,)
+    h = torch.arange(num_heads, dtype=torch.float64)               # (H,)
