# The upper half is a copy of the lower one, bucket num_buckets // 2 included: relative position 0 is read as a key after the query, so that bucket gets distance 0 instead of -1.
# caught by a visible test
# cause: bucket_upper_half_start
# %% patch: t5_bucket_starts
-        starts[n + 1:] = starts[1:n]                               # bucket n: relative position 0 is in the past half
+        starts[n:] = starts[:n]                                    # the upper half, the same distances
