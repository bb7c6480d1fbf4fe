# The tokens are drawn from 0 .. vocab_size - 2: the last token id never appears.
# caught by a visible test
# %% patch: make_copy_back_task
-        tokens = torch.randint(vocab_size, (batch_size, T), generator=gen)  # (B, T): the one draw
+        tokens = torch.randint(vocab_size - 1, (batch_size, T), generator=gen)  # (B, T)
