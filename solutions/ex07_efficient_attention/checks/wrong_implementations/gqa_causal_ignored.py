# Grouped-query attention ignores causal=True.
# caught by a visible test
# %% patch: grouped_query_attention
-    if causal:
+    if False:
