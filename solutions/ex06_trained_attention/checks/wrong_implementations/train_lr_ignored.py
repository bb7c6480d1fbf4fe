# Adam is created without lr, so it always uses its default learning rate, 1e-3.
# caught by a visible test
# %% patch: train
-    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
+    optimizer = torch.optim.Adam(model.parameters())
