# The scored mask is copied from the previous-token task: only position 0 is left out, whatever k is.
# caught by a visible test
# %% patch: make_copy_back_task
-    counts = torch.arange(T) >= k  # (T,): position t has a token k places back
+    counts = torch.arange(T) >= 1  # (T,): every position but the first
