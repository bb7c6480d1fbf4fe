# Causal tiled attention masks the tile on the diagonal but still visits the tiles after it, unmasked: queries see later keys.
# caught by a visible test
# %% patch: tiled_attention
-        end = min(Tk, i0 + block_size) if causal else Tk           # causal: later keys are all masked
+        end = Tk
