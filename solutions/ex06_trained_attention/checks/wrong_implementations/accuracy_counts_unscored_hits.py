# Right predictions are counted at every position, scored or not, and divided by the number that count.
# caught by a visible test
# cause: counts_unscored_hits
# %% patch: accuracy_by_position
-    hits = (logits.argmax(dim=-1) == targets) & scored  # (B, T): right, and counted
+    hits = logits.argmax(dim=-1) == targets  # (B, T): right
