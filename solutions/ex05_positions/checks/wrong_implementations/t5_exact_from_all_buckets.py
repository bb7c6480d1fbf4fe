# The number of exact buckets is taken from num_buckets before it is halved: half of a direction's buckets are exact only when not bidirectional.
# caught by a visible test
# %% patch: t5_relative_bucket
-    exact = half // 2
+    exact = num_buckets // 2
