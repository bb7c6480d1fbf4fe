# Clamps the distance to max_distance - 1 before the logarithm instead of capping the bucket: right while max_distance is large, but with a small max_distance that distance is not in the last bucket.
# %% patch: t5_relative_bucket
-    fraction = torch.log(distance.float() / exact) / math.log(max_distance / exact)
-    wide = (exact + (fraction * (half - exact)).long()).clamp(max=half - 1)
+    capped = distance.clamp(max=max_distance - 1)                  # every far distance counts as max_distance - 1
+    fraction = torch.log(capped.float() / exact) / math.log(max_distance / exact)
+    wide = exact + (fraction * (half - exact)).long()
