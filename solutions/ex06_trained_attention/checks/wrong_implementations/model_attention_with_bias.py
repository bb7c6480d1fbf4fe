# The attention layers keep MultiHeadAttention's default bias=True: parameters the model does not have.
# caught by a visible test
# %% patch: attention_only_model
-            MultiHeadAttention(d_model, num_heads, bias=False) for _ in range(num_layers)
+            MultiHeadAttention(d_model, num_heads) for _ in range(num_layers)
