# The rotation angle with the wrong sign: the pairs turn clockwise.
# caught by a visible test
# %% patch: apply_rope
-    out[..., 0::2] = x_even * cos - x_odd * sin
-    out[..., 1::2] = x_even * sin + x_odd * cos
+    out[..., 0::2] = x_even * cos + x_odd * sin
+    out[..., 1::2] = -x_even * sin + x_odd * cos
