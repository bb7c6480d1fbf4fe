# A head is "switched off" by zeroing its queries: its attention becomes uniform, and it still adds the mean of its values.
# caught by a visible test
# cause: drop_definition
# %% patch: ablation
-                kept = layer.W_o.weight[:, reads].clone()
-                layer.W_o.weight[:, reads] = 0.0
+                kept = layer.W_q.weight[reads].clone()
+                layer.W_q.weight[reads] = 0.0

-                    layer.W_o.weight[:, reads] = kept
+                    layer.W_q.weight[reads] = kept
