# The cross-entropy is averaged over every position, the ones that do not count (scored False) included.
# caught by a visible test
# %% patch: loss_and_accuracy
-    loss = F.cross_entropy(logits[scored], targets[scored])  # mean over the N positions that count
+    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # mean over all B * T positions
