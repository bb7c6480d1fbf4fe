# No residual connection: each layer's output replaces its input (x = out) instead of being added to it.
# caught by a visible test
# %% patch: attention_only_model
-            x = x + out  # residual: the layer adds to what it read
+            x = out  # the layer's output replaces what it read
