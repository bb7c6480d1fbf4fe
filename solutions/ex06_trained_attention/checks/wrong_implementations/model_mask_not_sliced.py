# The whole (context_len, context_len) mask is passed for every sequence: a sequence shorter than context_len fails.
# caught by a visible test
# %% patch: attention_only_model
-        mask = self.causal[:T, :T]  # (T, T), True = may attend
+        mask = self.causal  # (context_len, context_len), True = may attend
