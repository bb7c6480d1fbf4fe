# Returns the float64 table it computed instead of converting it to float32.
# caught by a visible test
# %% patch: sinusoidal_encoding
-    return pe.to(torch.float32)
+    return pe
