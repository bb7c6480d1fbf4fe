# Default positions counted from 1 instead of 0.
# caught by a visible test
# %% patch: apply_rope
-        positions = torch.arange(T)
+        positions = torch.arange(1, T + 1)
