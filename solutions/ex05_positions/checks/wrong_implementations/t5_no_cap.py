# The logarithmic bucket is not capped at the last bucket of its half: distances beyond max_distance spill into the other half and past num_buckets.
# caught by a visible test
# %% patch: t5_relative_bucket
-    wide = (exact + (fraction * (half - exact)).long()).clamp(max=half - 1)
+    wide = exact + (fraction * (half - exact)).long()
