# No check of the sequence length: a sequence longer than context_len fails deep inside with a shape error, not a ValueError naming context_len.
# caught by a visible test
# %% patch: causal_attention
-        self.d_in, self.d_out, self.context_len = d_in, d_out, context_len
+        self.d_in, self.d_out = d_in, d_out

-        if n_tokens > self.context_len:
-            raise ValueError(f"sequence length T={n_tokens} exceeds context_len={self.context_len}")
