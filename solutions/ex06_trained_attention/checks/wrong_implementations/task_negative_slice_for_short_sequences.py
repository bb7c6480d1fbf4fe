# Each row scores its last length - k positions with a negative slice: for a sequence no longer than k, -(length - k) is 0 or positive, and the slice scores padding.
# caught by a visible test
# cause: scores_no_answer
# %% patch: make_copy_back_task
-        scored = positions >= start + k  # (B, T): t - k is a real position of the sequence (so is t)
+        scored = torch.zeros(batch_size, T, dtype=torch.bool)
+        for b, n in enumerate(lengths.tolist()):
+            scored[b, -(n - k):] = True  # the last n - k positions
