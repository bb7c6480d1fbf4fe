# RoPE applied to the values too, so the outputs are no longer averages of the values.
# caught by a visible test
# %% patch: rope_attention
-    return weights @ v, weights                                    # values are not rotated
+    return weights @ apply_rope(v, positions), weights
