# The ValueError message is copied from the example ("embed_dim=10 ... num_heads=3") instead of naming the actual numbers.
# caught by a visible test
# %% patch: multi_head_attention
-            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
+            raise ValueError("embed_dim=10 is not divisible by num_heads=3")
