# Rotary attention takes the softmax over the queries (dim=-2) instead of over the keys.
# caught by a visible test
# %% patch: rope_attention
-    weights = torch.softmax(scores, dim=-1)                        # (..., T, T), rows sum to 1
+    weights = torch.softmax(scores, dim=-2)                        # (..., T, T)
