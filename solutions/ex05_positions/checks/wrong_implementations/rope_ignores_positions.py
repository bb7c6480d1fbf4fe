# RoPE ignores the positions argument and always rotates by 0, 1, ..., T-1.
# caught by a visible test
# %% patch: apply_rope
-    if positions is None:
-        positions = torch.arange(T)
+    positions = torch.arange(T)
