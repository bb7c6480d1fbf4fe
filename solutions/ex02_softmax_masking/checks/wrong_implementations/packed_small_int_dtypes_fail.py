# Converts only a Python list to a tensor and passes a tensor on as it came: torch.repeat_interleave has no kernel for int8, int16 or uint8 repeats, so lengths of those dtypes raise.
# caught by a visible test
# cause: integer_dtypes
# %% patch: packed_causal_mask
-    lengths = torch.as_tensor(lengths, dtype=torch.long).reshape(-1)          # (S,), any integer dtype read exactly
+    if not isinstance(lengths, torch.Tensor):
+        lengths = torch.tensor(lengths, dtype=torch.long)
+    lengths = lengths.reshape(-1)                                             # (S,)
