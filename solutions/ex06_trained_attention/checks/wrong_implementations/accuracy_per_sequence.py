# The accuracy is averaged over the positions of each sequence: one number per sequence, (B,), not per position.
# caught by a visible test
# cause: accuracy_not_per_position
# %% patch: accuracy_by_position
-    return hits.sum(dim=0).double() / scored.sum(dim=0).double()  # (T,); 0 / 0 = nan where none counts
+    return hits.sum(dim=1).double() / scored.sum(dim=1).double()  # (B,)
