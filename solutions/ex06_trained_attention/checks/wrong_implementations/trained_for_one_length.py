# train_copy_back_model builds its model for sequences of 9 tokens, the visible test's length, whatever context_len it is given: it fails at any other length.
# caught by a visible test
# cause: raised
# %% patch: train_copy_back_model
-    model = AttentionOnlyModel(vocab_size, d_model=16, num_heads=1, num_layers=1, context_len=context_len)
+    model = AttentionOnlyModel(vocab_size, d_model=16, num_heads=1, num_layers=1, context_len=9)
