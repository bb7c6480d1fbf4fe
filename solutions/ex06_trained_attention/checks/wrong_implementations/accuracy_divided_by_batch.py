# The right predictions at each position are divided by the batch size, not by the number of sequences where the position counts.
# caught by a visible test
# cause: divided_by_batch
# %% patch: accuracy_by_position
-    return hits.sum(dim=0).double() / scored.sum(dim=0).double()  # (T,); 0 / 0 = nan where none counts
+    return hits.sum(dim=0).double() / len(tokens)  # (T,)
