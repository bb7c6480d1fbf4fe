# The weights are not reset: training continues from whatever weights the model holds.
# caught by a visible test
# %% patch: train
-    for module in model.modules():  # fresh weights, the same for a seed
-        if hasattr(module, "reset_parameters"):
-            module.reset_parameters()
