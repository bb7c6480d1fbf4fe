# Takes base-10 logarithms of the weights, although the softmax exponentiates with e.
# caught by a visible test
# cause: log10
# %% patch: score_gaps
-    log_weights = np.log(np.asarray(A, dtype=float))        # (T_q, T_k): scaled scores minus a per-row constant
+    log_weights = np.log10(np.asarray(A, dtype=float))      # (T_q, T_k)
