# Converts every tensor of lengths with dtype=torch.long, booleans and floats included: a boolean tensor is read as lengths 0 and 1 and a float one truncated, where the task asks for a TypeError.
# caught by a visible test
# cause: no_validation
# %% patch: packed_causal_mask
-    if isinstance(lengths, torch.Tensor) and (lengths.dtype == torch.bool or lengths.is_floating_point()
-                                              or lengths.is_complex()):
-        raise TypeError(f"lengths must be integers, got a tensor of dtype {lengths.dtype}")
