# Computes the logarithmic fraction in float64 rather than in float32 as T5's code does: at distances where it is a whole number in exact arithmetic, the two truncate to different buckets.
# %% patch: t5_relative_bucket
-    fraction = torch.log(distance.float() / exact) / math.log(max_distance / exact)
+    fraction = torch.log(distance.double() / exact) / math.log(max_distance / exact)
