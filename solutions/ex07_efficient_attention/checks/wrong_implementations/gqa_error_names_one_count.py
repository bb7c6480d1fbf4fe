# Grouped-query attention's ValueError names the number of key/value heads only, not the number of query heads.
# caught by a visible test
# %% patch: grouped_query_attention
-        raise ValueError(f"{H} query heads cannot be shared equally by {G} key/value heads: H must be a multiple of G")
+        raise ValueError(f"the number of query heads must be a multiple of G={G}")
