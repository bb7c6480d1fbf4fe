# Projects the queries, keys and values without in_proj_bias: invisible on a fresh layer, whose biases are 0.
# caught by a visible test
# cause: in_proj_bias_ignored
# %% patch: like_torch
-    q = F.linear(query.transpose(0, 1), w_q, b_q)                       # (B, Tq, E)
-    k = F.linear(key.transpose(0, 1), w_k, b_k)                         # (B, Tk, E)
-    v = F.linear(value.transpose(0, 1), w_v, b_v)                       # (B, Tk, E)
+    q = F.linear(query.transpose(0, 1), w_q)                            # (B, Tq, E)
+    k = F.linear(key.transpose(0, 1), w_k)                              # (B, Tk, E)
+    v = F.linear(value.transpose(0, 1), w_v)                            # (B, Tk, E)
