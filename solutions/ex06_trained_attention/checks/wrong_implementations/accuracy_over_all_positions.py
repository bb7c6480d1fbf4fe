# The accuracy counts every position, also those that do not count (scored False).
# caught by a visible test
# %% patch: loss_and_accuracy
-    correct = logits.argmax(dim=-1)[scored] == targets[scored]  # (N,)
+    correct = logits.argmax(dim=-1) == targets  # (B, T)
