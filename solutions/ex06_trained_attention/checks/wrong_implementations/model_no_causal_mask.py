# The layers are called without the causal mask: every position attends to later tokens, and on a next-token task the model would copy the future.
# caught by a visible test
# %% patch: attention_only_model
-            out, w = layer(x, x, x, mask)  # (B, T, D), (B, H, T, T)
+            out, w = layer(x, x, x)  # (B, T, D), (B, H, T, T)
