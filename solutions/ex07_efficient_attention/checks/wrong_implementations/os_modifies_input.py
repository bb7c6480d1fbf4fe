# The online softmax computes its output in place on x.movedim(dim, -1), a view of x: the caller's x is overwritten.
# caught by a visible test
# %% patch: online_softmax
-    return (torch.exp(xs - ref) / l).movedim(-1, dim)
+    return xs.sub_(ref).exp_().div_(l).movedim(-1, dim)
