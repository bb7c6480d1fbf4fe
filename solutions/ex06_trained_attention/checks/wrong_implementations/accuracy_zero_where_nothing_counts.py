# A position that counts nowhere gets accuracy 0 instead of nan (the count is clamped to at least 1).
# caught by a visible test
# cause: nan_where_nothing_counts
# %% patch: accuracy_by_position
-    return hits.sum(dim=0).double() / scored.sum(dim=0).double()  # (T,); 0 / 0 = nan where none counts
+    return hits.sum(dim=0).double() / scored.sum(dim=0).clamp(min=1).double()  # (T,)
