# Only the model's direct children are reset (model.children()): the layers inside an nn.ModuleList keep their weights.
# caught by a visible test
# %% patch: train
-    for module in model.modules():  # fresh weights, the same for a seed
+    for module in model.children():  # fresh weights, the same for a seed
