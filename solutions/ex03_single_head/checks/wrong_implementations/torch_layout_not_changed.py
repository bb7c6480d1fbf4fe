# Computes in the layer's (T, B, E) layout as if it were (B, T, E): the batched product pairs query positions with key positions, and fails when Tq and Tk differ.
# caught by a visible test
# cause: raised
# %% patch: like_torch
-    q = F.linear(query.transpose(0, 1), w_q, b_q)                       # (B, Tq, E)
-    k = F.linear(key.transpose(0, 1), w_k, b_k)                         # (B, Tk, E)
-    v = F.linear(value.transpose(0, 1), w_v, b_v)                       # (B, Tk, E)
+    q = F.linear(query, w_q, b_q)
+    k = F.linear(key, w_k, b_k)
+    v = F.linear(value, w_v, b_v)

-    return out.transpose(0, 1), weights
+    return out, weights
