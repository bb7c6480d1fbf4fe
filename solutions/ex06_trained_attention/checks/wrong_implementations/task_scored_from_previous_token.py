# The previous-token task's rule carried over to each row: every real position but a sequence's first counts, whatever k is.
# caught by a visible test
# cause: scores_no_answer
# %% patch: make_copy_back_task
-        scored = positions >= start + k  # (B, T): t - k is a real position of the sequence (so is t)
+        scored = positions >= start + 1  # (B, T): every real position but the first
