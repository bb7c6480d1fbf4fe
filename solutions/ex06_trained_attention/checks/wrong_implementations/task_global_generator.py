# The tokens are drawn from torch's global generator: gen is ignored, and the same generator state does not give the same batch.
# caught by a visible test
# %% patch: make_copy_back_task
-        tokens = torch.randint(vocab_size, (batch_size, T), generator=gen)  # (B, T): the one draw
+        tokens = torch.randint(vocab_size, (batch_size, T))  # (B, T)
