# cache_lengths is never checked: a length above L or below 0 gives a mask and positions that mean nothing instead of a ValueError.
# caught by a visible test
# cause: no_validation
# %% patch: rope_decode_step
-    if tuple(lengths.shape) != (B,) or bool(((lengths < 0) | (lengths > L)).any()):
-        raise ValueError(f"cache_lengths should hold one length from 0 to L = {L} for each of the B = {B} "
-                         f"sequences, shape ({B},); it has shape {tuple(lengths.shape)}: {lengths.tolist()}")
