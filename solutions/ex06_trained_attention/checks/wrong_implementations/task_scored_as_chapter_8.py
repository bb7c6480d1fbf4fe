# Chapter 8's one rule for every row: every position from k on counts, in a padded sequence too, where the answer is padding or the position itself is.
# caught by a visible test
# cause: scores_no_answer
# %% patch: make_copy_back_task
-        scored = positions >= start + k  # (B, T): t - k is a real position of the sequence (so is t)
+        scored = (positions >= k).expand(batch_size, T).clone()  # (B, T): t - k is a position
