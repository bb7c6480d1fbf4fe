# ablation_drops switches a head off as chapter 8 did, zeroing its rows of W_v: in a layer with biases the head still outputs its value bias.
# caught by a visible test
# cause: drop_definition
# %% patch: ablation
-                kept = layer.W_o.weight[:, reads].clone()
-                layer.W_o.weight[:, reads] = 0.0
+                kept = layer.W_v.weight[reads].clone()
+                layer.W_v.weight[reads] = 0.0

-                    layer.W_o.weight[:, reads] = kept
+                    layer.W_v.weight[reads] = kept
