# Undoes the scaling by multiplying with d_k instead of its square root.
# caught by a visible test
# cause: d_k_for_sqrt
# %% patch: score_gaps
-    return np.sqrt(d_k) * (log_weights - log_weights[:, :1])
+    return d_k * (log_weights - log_weights[:, :1])
