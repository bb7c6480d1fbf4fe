# Chapter 8's rule with the padding left out: a real position from k on counts, even when the token k places back is padding.
# caught by a visible test
# cause: scores_no_answer
# %% patch: make_copy_back_task
-        scored = positions >= start + k  # (B, T): t - k is a real position of the sequence (so is t)
+        scored = (positions >= k) & (positions >= start)  # (B, T): t has a position k back and is real
