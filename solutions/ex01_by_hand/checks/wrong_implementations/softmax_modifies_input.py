# Shifts the scores in place (S -= max), so the caller's array comes back changed.
# caught by a visible test
# %% patch: softmax
-    shifted = S - S.max(axis=-1, keepdims=True)
-    exps = np.exp(shifted)
+    S -= S.max(axis=-1, keepdims=True)
+    exps = np.exp(S)
