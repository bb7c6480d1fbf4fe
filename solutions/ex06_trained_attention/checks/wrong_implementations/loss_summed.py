# The cross-entropy is summed over the positions that count instead of averaged (reduction="sum").
# caught by a visible test
# %% patch: loss_and_accuracy
-    loss = F.cross_entropy(logits[scored], targets[scored])  # mean over the N positions that count
+    loss = F.cross_entropy(logits[scored], targets[scored], reduction="sum")  # total over the N positions
