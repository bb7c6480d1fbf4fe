# The shape check compares the whole shapes of q and k, so it rejects the valid case Tq != Tk.
# caught by a visible test
# %% patch: sdpa
-    if q.shape[-1] != k.shape[-1]:
+    if q.shape != k.shape:
