# Every column j gets its own frequency 10000**(-j/D), so a cosine column does not share the angle of the sine before it.
# caught by a visible test
# %% cell: sinusoidal_encoding
def sinusoidal_encoding(T, D):
    if D % 2 != 0:
        raise ValueError(f"D={D} must be even: sines and cosines come in pairs")
    t = torch.arange(T, dtype=torch.float64)[:, None]             # (T, 1)
    j = torch.arange(D, dtype=torch.float64)                       # (D,) every column
    angles = t / 10000.0 ** (j / D)                                # (T, D)
    pe = torch.where(j % 2 == 0, torch.sin(angles), torch.cos(angles))
    return pe.to(torch.float32)
