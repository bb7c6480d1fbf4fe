# The ids are drawn from 0, as in chapter 8: a real token can carry the padding id.
# caught by a visible test
# cause: tokens_not_as_drawn
# %% patch: make_copy_back_task
-        drawn = torch.randint(1, vocab_size, (batch_size, T), generator=gen)  # (B, T): the second draw
+        drawn = torch.randint(vocab_size, (batch_size, T), generator=gen)  # (B, T)
