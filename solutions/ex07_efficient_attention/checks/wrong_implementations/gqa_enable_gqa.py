# Grouped-query attention hands the grouping to F.scaled_dot_product_attention(..., enable_gqa=True) instead of sharing the heads itself (and needs PyTorch 2.5).
# caught by a visible test
# %% patch: grouped_query_attention
-    k = k.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_k): head h is k[:, h // (H // G)]
-    v = v.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_v)
+    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
