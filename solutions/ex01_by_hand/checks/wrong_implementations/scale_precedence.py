# Writes the square root as d_k ** 1 / 2, which is (d_k ** 1) / 2 = d_k / 2: right only for d_k = 4.
# caught by a visible test
# %% patch: scale_scores
-    return np.asarray(S, dtype=float) / np.sqrt(d_k)
+    return np.asarray(S, dtype=float) / (d_k ** 1 / 2)
