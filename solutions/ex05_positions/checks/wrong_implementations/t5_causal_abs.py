# In the causal case the distance is the absolute value, so keys after the query get buckets of their own instead of bucket 0.
# caught by a visible test
# %% patch: t5_relative_bucket
-        distance = (-rel).clamp(min=0)                             # a later key counts as distance 0
+        distance = rel.abs()
