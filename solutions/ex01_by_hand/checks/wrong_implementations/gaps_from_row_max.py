# Measures each gap from the row's largest weight (its top score) instead of from the first key.
# caught by a visible test
# cause: gaps_from_max
# %% patch: score_gaps
-    return np.sqrt(d_k) * (log_weights - log_weights[:, :1])
+    return np.sqrt(d_k) * (log_weights - log_weights.max(axis=1, keepdims=True))
