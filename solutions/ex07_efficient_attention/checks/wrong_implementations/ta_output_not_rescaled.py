# Tiled attention rescales the running sum but not the running output when the maximum grows.
# caught by a visible test
# %% patch: tiled_attention
-            acc = c * acc + p @ v_blk
+            acc = acc + p @ v_blk
