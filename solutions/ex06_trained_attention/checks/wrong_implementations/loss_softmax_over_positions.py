# The log-softmax is taken over the positions (dim=1) instead of the vocabulary.
# caught by a visible test
# %% patch: loss_and_accuracy
-    loss = F.cross_entropy(logits[scored], targets[scored])  # mean over the N positions that count
+    log_probs = logits.log_softmax(dim=1)  # (B, T, vocab_size)
+    loss = -log_probs.gather(-1, targets[..., None])[..., 0][scored].mean()  # mean over the N positions that count
