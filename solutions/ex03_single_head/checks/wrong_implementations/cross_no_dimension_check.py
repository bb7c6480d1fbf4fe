# Checks the widths and that the leading dimensions agree, but not that x and context have 2 or 3 dimensions: a 4-dimensional pair is attended to instead of refused.
# caught by a visible test
# cause: no_validation
# %% patch: cross_attention
-        if x.ndim not in (2, 3) or x.shape[-1] != self.d_query:
+        if x.shape[-1] != self.d_query:
