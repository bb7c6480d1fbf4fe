# need_weights=False still returns the weights, where nn.MultiheadAttention returns None.
# caught by a visible test
# cause: need_weights_ignored
# %% patch: multihead_cross_attention
-        if not need_weights:
-            return out, None
+        pass
