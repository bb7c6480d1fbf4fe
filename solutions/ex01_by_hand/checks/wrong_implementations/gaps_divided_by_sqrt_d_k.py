# Divides by sqrt(d_k) again instead of multiplying: applies the scaling a second time rather than undoing it.
# caught by a visible test
# cause: scaled_twice
# %% patch: score_gaps
-    return np.sqrt(d_k) * (log_weights - log_weights[:, :1])
+    return (log_weights - log_weights[:, :1]) / np.sqrt(d_k)
