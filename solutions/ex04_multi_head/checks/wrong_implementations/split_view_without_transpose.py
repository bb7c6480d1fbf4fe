# Heads split with x.view(B, H, T, d) and merged with the mirror-image view: right shapes, a round trip that works, wrong contents.
# caught by a visible test
# %% patch: split_heads
-    return x.view(B, T, num_heads, head_dim).transpose(1, 2)  # (B, H, T, d)
+    return x.view(B, num_heads, T, head_dim)  # (B, H, T, d)
# %% patch: merge_heads
-    return x.transpose(1, 2).reshape(B, T, H * head_dim)  # (B, T, D)
+    return x.reshape(B, T, H * head_dim)  # (B, T, D)
