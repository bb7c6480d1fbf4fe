# The causal mask is torch.tril of T_new rows and L + T_new columns: its diagonal starts in the top-left corner, so the new tokens see only the first keys.
# caught by a visible test
# %% patch: rope_decode_step
-    scores = scores.masked_fill(key_at[None, :] > query_at[:, None], float("-inf"))
+    scores = scores.masked_fill(~torch.ones(T_new, L + T_new, dtype=torch.bool).tril(), float("-inf"))
