# num_buckets is not halved when bidirectional: the search looks for buckets of the past up to num_buckets - 1, which no key in the past reaches, and there is no upper half to fill.
# caught by a visible test
# cause: bucket_not_halved
# %% patch: t5_bucket_starts
-    n = num_buckets // 2 if bidirectional else num_buckets         # the buckets of the past
+    n = num_buckets                                                # the buckets of the past

-    if bidirectional:
-        starts[n + 1:] = starts[1:n]                               # bucket n: relative position 0 is in the past half
