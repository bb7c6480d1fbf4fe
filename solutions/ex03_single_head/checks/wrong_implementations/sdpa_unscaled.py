# No scaling: the softmax is taken of the raw dot products q k^T, without dividing by sqrt(d_k).
# caught by a visible test
# %% patch: sdpa
-    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)   # (..., Tq, Tk)
+    logits = torch.matmul(q, k.transpose(-2, -1))
