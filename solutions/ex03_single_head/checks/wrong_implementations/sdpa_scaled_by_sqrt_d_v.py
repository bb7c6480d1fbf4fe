# Scores divided by the square root of the value width d_v instead of the key width d_k.
# caught by a visible test
# %% patch: sdpa
-    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)   # (..., Tq, Tk)
+    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(v.shape[-1])
