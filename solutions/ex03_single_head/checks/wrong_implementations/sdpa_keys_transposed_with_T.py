# k.T instead of k.transpose(-2, -1): on a batched tensor .T reverses every dimension, not just the last two.
# caught by a visible test
# %% patch: sdpa
-    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)   # (..., Tq, Tk)
+    logits = torch.matmul(q, k.T) / math.sqrt(d_k)
