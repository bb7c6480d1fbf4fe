# Scores divided by sqrt(d_query), the width of x, instead of sqrt(d_k), the width of the queries and keys.
# caught by a visible test
# cause: scaled_by_wrong_width
# %% patch: cross_attention
-        d_k = queries.shape[-1]
+        d_k = self.d_query
