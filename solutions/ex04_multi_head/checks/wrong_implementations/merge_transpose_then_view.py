# merge_heads transposes and then calls view without .contiguous(): raises a RuntimeError on the layout attention produces.
# caught by a visible test
# %% patch: merge_heads
-    return x.transpose(1, 2).reshape(B, T, H * head_dim)  # (B, T, D)
+    return x.transpose(1, 2).view(B, T, H * head_dim)  # (B, T, D)
