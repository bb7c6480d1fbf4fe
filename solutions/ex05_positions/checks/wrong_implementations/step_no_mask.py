# No causal mask in the step: with several new tokens, each sees the new tokens after it (harmless only when one token is added at a time).
# caught by a visible test
# %% patch: rope_decode_step
-    scores = scores.masked_fill(key_at[None, :] > query_at[:, None], float("-inf"))
