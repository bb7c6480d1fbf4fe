# Softmax taken over the queries (dim=-2) instead of the keys: columns sum to 1 instead of rows.
# caught by a visible test
# %% patch: multi_head_attention
-        weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk), rows sum to 1
+        weights = torch.softmax(scores, dim=-2)  # (B, H, Tq, Tk)
