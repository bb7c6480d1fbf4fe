# merge_heads transposes and then calls view without .contiguous(): raises a RuntimeError on the layout attention produces.
# %% patch: merge_heads
-    return x.transpose(1, 2).reshape(B, T, H * head_dim)  # (B, T, D)
+    return x.transpose(1, 2).view(B, T, H * head_dim)  # (B, T, D)
