# The last bucket of a half is taken to start at max_distance, from "every distance from max_distance on shares it", although the cap makes it start earlier.
# caught by a visible test
# cause: bucket_last_at_max
# %% patch: t5_bucket_starts
     starts[e:n] = torch.where(bucket(lo) == target, lo, -1)       # a bucket jumped over gets no key
+    starts[n - 1] = max_distance
