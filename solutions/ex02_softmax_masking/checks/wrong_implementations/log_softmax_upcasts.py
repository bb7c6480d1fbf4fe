# Computes in float32 and returns float32 whatever the dtype of x: float16 in gives float32 out.
# caught by a visible test
# cause: changes_dtype
# %% patch: stable_log_softmax
-    top = x.amax(dim=dim, keepdim=True)                        # (*) with size 1 along dim
+    x = x.float()
+    top = x.amax(dim=dim, keepdim=True)
