# Takes the maximum without keepdim=True: a (3,) maximum lines up with the columns of a (3, 3) matrix, not its rows.
# caught by a visible test
# cause: no_keepdim
# %% patch: stable_log_softmax
-    top = x.amax(dim=dim, keepdim=True)                        # (*) with size 1 along dim
+    top = x.amax(dim=dim)
