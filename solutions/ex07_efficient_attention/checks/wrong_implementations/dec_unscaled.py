# decode_step without the 1/sqrt(d_k) scale.
# caught by a visible test
# %% patch: decode_step
-    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (..., 1, t): no mask, all is past
+    scores = q @ keys.transpose(-2, -1)                            # (..., 1, t)
