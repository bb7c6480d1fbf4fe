# No check that D is even: an odd D fails with a RuntimeError about shapes instead of a ValueError naming D.
# caught by a visible test
# %% patch: sinusoidal_encoding
-    if D % 2 != 0:
-        raise ValueError(f"D={D} must be even: sines and cosines come in pairs")
     t = torch.arange(T, dtype=torch.float64)[:, None]             # (T, 1)
