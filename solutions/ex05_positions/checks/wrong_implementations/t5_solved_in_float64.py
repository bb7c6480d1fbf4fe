# The formula solved for the distance in float64 and rounded up, without asking T5's rule: off by one where T5's float32 fraction truncates to the other side of a whole number, and no -1 for skipped buckets.
# caught by a visible test
# cause: bucket_solved_in_float64
# %% patch: t5_bucket_starts
-    lo = torch.full_like(target, e)                                # bisection: the first a whose bucket >= target
-    hi = torch.full_like(target, max_distance)                     # max_distance is in the last bucket, n - 1
-    while bool((lo < hi).any()):
-        mid = (lo + hi) // 2
-        reached = bucket(mid) >= target
-        hi = torch.where(reached, mid, hi)
-        lo = torch.where(reached, lo, mid + 1)
-    starts[e:n] = torch.where(bucket(lo) == target, lo, -1)       # a bucket jumped over gets no key
+    # bucket b starts where e + ln(a / e) / ln(max_distance / e) * (n - e) reaches b
+    solved = e * torch.exp((target - e).double() / (n - e) * math.log(max_distance / e))
+    starts[e:n] = solved.ceil().long()
