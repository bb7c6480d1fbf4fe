# With bidirectional=True every direction keeps all num_buckets buckets: later keys land beyond num_buckets.
# caught by a visible test
# %% patch: t5_relative_bucket
-        half = num_buckets // 2                                    # one half for each direction
+        half = num_buckets
