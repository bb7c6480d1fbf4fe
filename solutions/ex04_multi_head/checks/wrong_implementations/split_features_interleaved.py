# Features cut as (d, H) instead of (H, d), with the matching merge: head h gets features h, h+H, h+2H, ... instead of one consecutive chunk.
# caught by a visible test
# %% patch: split_heads
-    return x.view(B, T, num_heads, head_dim).transpose(1, 2)  # (B, H, T, d)
+    return x.view(B, T, head_dim, num_heads).permute(0, 3, 1, 2)  # (B, H, T, d)
# %% patch: merge_heads
-    return x.transpose(1, 2).reshape(B, T, H * head_dim)  # (B, T, D)
+    return x.permute(0, 2, 3, 1).reshape(B, T, head_dim * H)  # (B, T, D)
