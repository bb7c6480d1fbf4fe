# Grouped-query attention does not check that H is a multiple of G: 6 query heads and 4 key/value heads end in a RuntimeError about shapes, not a ValueError.
# caught by a visible test
# %% patch: grouped_query_attention
-    if H % G != 0:
-        raise ValueError(f"{H} query heads cannot be shared equally by {G} key/value heads: H must be a multiple of G")
     k = k.repeat_interleave(H // G, dim=1)                         # (B, H, T, d_k): head h is k[:, h // (H // G)]
