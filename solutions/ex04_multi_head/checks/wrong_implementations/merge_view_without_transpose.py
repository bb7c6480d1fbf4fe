# merge_heads views (B, H, T, d) straight back to (B, T, H*d), without moving the head axis first.
# caught by a visible test
# %% patch: merge_heads
-    return x.transpose(1, 2).reshape(B, T, H * head_dim)  # (B, T, D)
+    return x.contiguous().view(B, T, H * head_dim)  # (B, T, D)
