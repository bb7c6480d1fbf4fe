# The cache concatenates along dimension 0, the batch, instead of -2, the tokens.
# caught by a visible test
# %% patch: kv_cache
-            self.keys = torch.cat([self.keys, k], dim=-2)          # the new positions after the old ones
-            self.values = torch.cat([self.values, v], dim=-2)
+            self.keys = torch.cat([self.keys, k], dim=0)
+            self.values = torch.cat([self.values, v], dim=0)
