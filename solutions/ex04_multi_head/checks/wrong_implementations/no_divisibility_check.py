# No check that embed_dim is divisible by num_heads: the layer is built, and fails only later, with a reshape error.
# caught by a visible test
# cause: no_validation
# %% patch: multihead_weights
-        if embed_dim % num_heads != 0:
-            raise ValueError(f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
+        pass
