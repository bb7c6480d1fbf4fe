# ALiBi slopes in reverse head order: head 0 gets the gentlest slope 2**-8.
# caught by a visible test
# %% patch: alibi_bias
-    h = torch.arange(1, num_heads + 1, dtype=torch.float64)        # (H,)
+    h = torch.arange(num_heads, 0, -1, dtype=torch.float64)        # (H,)
