# decode_step takes the softmax over dimension -2, the single query, so every weight is 1 and the values are summed.
# caught by a visible test
# %% patch: decode_step
-    return torch.softmax(scores, dim=-1) @ values                  # (..., 1, d_v)
+    return torch.softmax(scores, dim=-2) @ values                  # (..., 1, d_v)
