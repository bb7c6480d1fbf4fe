# The relative position is read as the query's position minus the key's: past and future keys swap halves.
# caught by a visible test
# %% patch: t5_relative_bucket
-    rel = torch.as_tensor(relative_position).long()
+    rel = -torch.as_tensor(relative_position).long()
