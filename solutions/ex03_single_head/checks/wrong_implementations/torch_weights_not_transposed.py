# Projects with x @ W, forgetting that the stored weights are in nn.Linear's (out, in) layout and need x @ W.T.
# caught by a visible test
# cause: weights_transposed
# %% patch: like_torch
-    q = F.linear(query.transpose(0, 1), w_q, b_q)                       # (B, Tq, E)
-    k = F.linear(key.transpose(0, 1), w_k, b_k)                         # (B, Tk, E)
-    v = F.linear(value.transpose(0, 1), w_v, b_v)                       # (B, Tk, E)
+    q = query.transpose(0, 1) @ w_q + (0 if b_q is None else b_q)
+    k = key.transpose(0, 1) @ w_k + (0 if b_k is None else b_k)
+    v = value.transpose(0, 1) @ w_v + (0 if b_v is None else b_v)
