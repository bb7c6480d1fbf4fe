# Compares the batch of the context with that of x only when x is batched: an unbatched x with a batched context broadcasts instead of raising.
# caught by a visible test
# cause: no_validation
# %% patch: cross_attention
-        if context.ndim != x.ndim or context.shape[-1] != self.d_context or context.shape[:-2] != x.shape[:-2]:
+        if context.ndim not in (2, 3) or context.shape[-1] != self.d_context or (
+                x.ndim == 3 and context.shape[:-2] != x.shape[:-2]):
