# Returns the gaps of the scaled scores, ln(A_ij / A_i0), forgetting to undo the division by sqrt(d_k).
# caught by a visible test
# cause: scaling_not_undone
# %% patch: score_gaps
-    return np.sqrt(d_k) * (log_weights - log_weights[:, :1])
+    return log_weights - log_weights[:, :1]
