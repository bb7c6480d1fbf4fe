# RoPE computed in place: the result is written into x itself, which also corrupts the second half of the rotation.
# caught by a visible test
# %% patch: apply_rope
-    out = torch.empty_like(x)
+    out = x
