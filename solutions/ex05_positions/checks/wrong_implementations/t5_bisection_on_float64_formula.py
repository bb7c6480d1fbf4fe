# The bisection asks its own float64 copy of the formula instead of T5's rule: right wherever float32 and float64 truncate alike, one off where they do not (distance 40 of 40 buckets and max_distance 320).
# caught by a visible test
# cause: bucket_rule_in_float64
# %% patch: t5_bucket_starts
-    def bucket(a):                                                 # T5's bucket of a key a positions back
-        return t5_relative_bucket(-a, bidirectional, num_buckets, max_distance)
+    def bucket(a):                                                 # the formula, in float64
+        fraction = torch.log(a.double() / e) / math.log(max_distance / e)
+        wide = (e + (fraction * (n - e)).long()).clamp(max=n - 1)
+        return torch.where(a < e, a, wide)
