# Grouped-query attention without the 1/sqrt(d_k) scale.
# caught by a visible test
# %% patch: grouped_query_attention
-    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])      # (B, H, T, T)
+    scores = q @ k.transpose(-2, -1)                               # (B, H, T, T)
