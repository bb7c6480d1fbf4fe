# The running maximum of the online softmax starts at 0 instead of -inf: for rows far below 0 every exponential underflows to 0, and 0 / 0 is NaN.
# caught by a visible test
# %% patch: online_softmax
-    m = xs.new_full(xs.shape[:-1] + (1,), float("-inf"))           # (..., 1), the running maximum
+    m = xs.new_zeros(xs.shape[:-1] + (1,))                         # (..., 1), the running maximum
