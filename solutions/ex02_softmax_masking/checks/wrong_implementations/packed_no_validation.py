# Does not check the lengths: a negative one surfaces as repeat_interleave's RuntimeError, which does not name it.
# caught by a visible test
# cause: wrong_exception
# %% patch: packed_causal_mask
-    negative = (lengths < 0).nonzero().flatten().tolist()
+    negative = []
