"""Verification of ex05_positions (PyTorch): one check per graded test cell.

``sinusoidal_encoding``, ``apply_rope`` and ``alibi_bias`` are called on the
visible examples and on fresh inputs of the hidden tests' shapes, and compared
with references computed here in float64, with the hidden tests' tolerances, and on a few sizes drawn afresh for each run
(a table of answers for the tests' own sizes does not pass).
``is_permutation_equivariant`` is given layers built in the sandbox from the
classes of the notebook's locked ``layers`` cell (``Tokenwise``,
``AddPositions``, ...), with weights and position tables drawn here; whether
each layer is equivariant is known here from how it was built, and the
student's answer must agree. ``rope_attention`` is judged by the properties
its hidden tests check, computed here from the returned tensors: rows that
sum to 1, an output that is the weights times the untouched values, weights
unchanged when every position moves by the same amount, and plain attention
when every token is at one position. Error messages are checked on the
hidden tests' own bad inputs.
"""

import math

import torch

from tools.verification.probes import Nested, as_tensor, close_torch, expect, expect_value_error


def reference_encoding(T, D):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    angles = t * 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(T, D)


def reference_rope(x, positions, base=10000.0):
    """RoPE from its definition, in float64, pair by pair."""
    x = x.double()
    out = torch.empty_like(x)
    d = x.shape[-1]
    for i in range(d // 2):
        theta = torch.as_tensor(positions).double() * base ** (-2 * i / d)
        c, s = theta.cos()[:, None], theta.sin()[:, None]
        a, b = x[..., 2 * i:2 * i + 1], x[..., 2 * i + 1:2 * i + 2]
        out[..., 2 * i:2 * i + 1] = a * c - b * s
        out[..., 2 * i + 1:2 * i + 2] = a * s + b * c
    return out


def reference_alibi(T, H):
    slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, dtype=torch.float64) / H)
    offset = (torch.arange(T)[None, :] - torch.arange(T)[:, None]).double()
    return (slopes[:, None, None] * offset).masked_fill(offset > 0, float("-inf"))


def expect_number_error(r, handle, what, number):
    expect_value_error(r, handle, what, patterns=(rf"(?<![\w.]){number}(?!\w|\.\d)",))


def as_input_at(r, handle, index, what):
    """The ``index``-th argument a probe sent back (its ``after``), as it was after the call."""
    return as_tensor(r.after(handle, index), what)


def expect_tensor(r, handle, what, shape, dtype):
    got = r.tensor(handle, what)
    expect(tuple(got.shape) == tuple(shape), f"{what} has shape {tuple(got.shape)}, expected {tuple(shape)}")
    expect(got.dtype == dtype, f"{what} is {got.dtype}, expected {dtype}")
    return got


def test_sinusoidal_encoding(p):
    sizes = [(6, 8), (1, 2), (7, 64), (50, 16), (100, 6), (33, 10), (12, 2)]
    sizes += [(int(p.rng.integers(2, 101)), 2 * int(p.rng.integers(1, 33))) for _ in range(3)]  # fresh sizes
    calls = [(T, D, p.call("sinusoidal_encoding", T, D)) for T, D in sizes]
    errors = [(T, D, p.call("sinusoidal_encoding", T, D)) for T, D in [(4, 7), (3, 5), (10, 1), (2, 33)]]

    def judge(r):
        for T, D, h in calls:
            what = f"sinusoidal_encoding({T}, {D})"
            got = expect_tensor(r, h, what, (T, D), torch.float32)
            close_torch(got.double(), reference_encoding(T, D), atol=1e-4, rtol=0, what=what)
        for T, D, h in errors:
            expect_number_error(r, h, f"sinusoidal_encoding({T}, {D})", D)

    return judge


def test_apply_rope(p):
    x_visible = torch.tensor([[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]] * 4)
    cases = [("the visible example", x_visible, 10000.0, p.call("apply_rope", x_visible))]
    for shape, base in [((5, 8), 10000.0), ((3, 7, 4), 10000.0), ((2, 3, 6, 10), 10000.0), ((1, 2), 10000.0),
                        ((2, 4, 9, 16), 500.0), ((4, 12, 6), 10.0)]:
        x = p.randn(*shape)
        cases.append((f"x of shape {shape}, base={base}", x, base, p.call("apply_rope", x, base=base)))
    errors = [(d, p.call("apply_rope", torch.zeros(T, d))) for T, d in [(3, 5), (4, 3), (2, 9)]]

    def judge(r):
        for label, x, base, h in cases:
            what = f"apply_rope on {label}"
            got = expect_tensor(r, h, what, x.shape, torch.float32)
            close_torch(got.double(), reference_rope(x, torch.arange(x.shape[-2]), base), atol=1e-4, rtol=1e-4,
                        what=what)
        for d, h in errors:
            expect_number_error(r, h, f"apply_rope with d={d}", d)

    return judge


def test_apply_rope_positions(p):
    cases = []
    x = p.randn(3, 4)
    for positions in (torch.tensor([0, 0, 0]), torch.tensor([2, 1, 0])):
        cases.append((x, positions, 1e-5, p.call("apply_rope", x, positions=positions, after=(0,))))
    x64 = x.double()
    cases.append((x64, torch.arange(3), 1e-5, p.call("apply_rope", x64, after=(0,))))
    xb = p.randn(2, 3, 5, 4)
    cases.append((xb, torch.arange(5), 1e-5, p.call("apply_rope", xb, after=(0,))))
    for shape, positions in [((5, 8), torch.arange(100, 105)), ((2, 6, 4), torch.tensor([7, 3, 3, 0, 120, 9])),
                             ((2, 2, 4, 6), torch.arange(4) + 41), ((3, 2), torch.tensor([130, 0, 65]))]:
        for dtype, tol in [(torch.float32, 1e-4), (torch.float64, 1e-10)]:
            x = p.randn(*shape, dtype=dtype)
            cases.append((x, positions, tol, p.call("apply_rope", x, positions=positions, after=(0,))))

    def judge(r):
        for x, positions, tol, h in cases:
            what = f"apply_rope on {x.dtype} x of shape {tuple(x.shape)} with positions {positions.tolist()}"
            got = expect_tensor(r, h, what, x.shape, x.dtype)
            close_torch(got.double(), reference_rope(x, positions), atol=tol, rtol=tol, what=what)
            expect(torch.equal(as_input_at(r, h, 0, what), x), f"{what} changed its input")

    return judge


# --- is_permutation_equivariant: layers from the notebook's `layers` cell ----------------------------------


def tokenwise(p, D, D_out):
    return Nested("Tokenwise", p.randn(D, D_out))


def add_positions(table):
    return Nested("AddPositions", table)


def mirror(p, T, D):
    """A (T, D) table that reads the same backwards, with rows that differ otherwise."""
    half = p.randn(T // 2, D)
    middle = [p.randn(1, D)] if T % 2 else []
    return torch.cat([half, *middle, half.flip(0)])


def test_is_permutation_equivariant(p):
    cases = []

    def add(label, layer, x, truth, **kwargs):
        cases.append((label, tuple(x.shape), x, truth,
                      p.call("is_permutation_equivariant", layer, x, after=(1,), **kwargs)))

    x = p.randn(2, 6, 4)
    add("Tokenwise", tokenwise(p, 4, 3), x, True)
    add("AddPositions", add_positions(p.randn(6, 4)), x, False)
    add("AddToSequences", Nested("AddToSequences", p.randn(2, 4)), x, True)
    add("PlainAttention", Nested("PlainAttention", p.randn(4, 6)), x, True)
    add("a mirror-symmetric AddPositions", add_positions(mirror(p, 6, 4)), x, False)
    slight = 1e-3 * torch.rand(6, 4, generator=p.gen)
    add("AddPositions with entries below 1e-3, atol=1e-2", add_positions(slight), x, True, atol=1e-2)
    add("AddPositions with entries below 1e-3", add_positions(slight), x, False)
    for B, T, D in [(1, 7, 3), (3, 9, 5), (2, 5, 6)]:
        x = p.randn(B, T, D)
        add("Tokenwise with another output width", tokenwise(p, D, 2 * D), x, True)
        add("causal PlainAttention", Nested("PlainAttention", p.randn(D, 6), True), x, False)
        add("PlainAttention", Nested("PlainAttention", p.randn(D, 3 * D)), x, True)
        add("a mirror-symmetric AddPositions, then PlainAttention",
            Nested("Chain", add_positions(mirror(p, T, D)), Nested("PlainAttention", p.randn(D, 6))), x, False)
        add("a mirror-symmetric AddPositions", add_positions(mirror(p, T, D)), x, False, num_trials=5)
        add("AddPositions with the same vector at every position, then Tokenwise",
            Nested("Chain", add_positions(p.randn(1, D).expand(T, D).contiguous()), tokenwise(p, D, 3)), x, True)
        add("AddToSequences, then PlainAttention",
            Nested("Chain", Nested("AddToSequences", p.randn(B, D)), Nested("PlainAttention", p.randn(D, 3 * D))),
            x, True)
        add("AddPositions with entries below 1e-7", add_positions(1e-7 * torch.rand(T, D, generator=p.gen)), x, True)
        add("AddPositions with entries up to 0.05, atol=0.1",
            add_positions(0.05 * torch.rand(T, D, generator=p.gen)), x, True, atol=0.1)
        add("AddPositions with entries up to 0.05, atol=1e-3",
            add_positions(0.05 * torch.rand(T, D, generator=p.gen)), x, False, atol=1e-3)
        add("PlainAttention on float64 input", Nested("PlainAttention", p.randn(D, 3 * D)), x.double(), True)
    x = p.randn(3, 2, 4)
    add("AddPositions whose two rows are equal", add_positions(p.randn(1, 4).expand(2, 4).contiguous()), x, True)
    add("AddPositions whose two rows differ", add_positions(p.randn(2, 4)), x, False, num_trials=1)

    def judge(r):
        for label, shape, x, truth, h in cases:
            what = f"is_permutation_equivariant for {label} (x of shape {shape})"
            verdict = r.value(h, what)
            expect(isinstance(verdict, bool), f"{what} returned {type(verdict).__name__}, not a bool")
            expect(verdict == truth, f"{what} returned {verdict}, expected {truth}")
            expect(torch.equal(as_input_at(r, h, 0, what), x), f"{what} changed its input x")

    return judge


def test_rope_attention(p):
    cases = []
    q, k, v = p.randn(2, 5, 4), p.randn(2, 5, 4), p.randn(2, 5, 6)
    cases.append(("the visible example's shapes", q, k, v, torch.arange(5), 1e-5))
    for B, H, T, d, dv, start in [(2, 3, 6, 8, 5, 0), (1, 4, 9, 4, 4, 50), (3, 2, 4, 16, 2, 11)]:
        for dtype, tol in [(torch.float32, 1e-4), (torch.float64, 1e-6)]:
            q, k = p.randn(B, H, T, d, dtype=dtype), p.randn(B, H, T, d, dtype=dtype)
            v = p.randn(B, H, T, dv, dtype=dtype)
            cases.append((f"q of shape {(B, H, T, d)}, {dtype}, positions from {start}", q, k, v,
                          torch.arange(T) + start, tol))
    probes = []
    for label, q, k, v, positions, tol in cases:
        same = torch.full_like(positions, int(positions[0]))
        probes.append((label, q, k, v, tol,
                       p.call("rope_attention", q, k, v, positions=positions),
                       p.call("rope_attention", q, k, v, positions=positions + 25),
                       p.call("rope_attention", q, k, v, positions=same)))

    def judge(r):
        for label, q, k, v, tol, h, h_shift, h_same in probes:
            out, weights = r.tensor_pair(h, f"rope_attention on {label}")
            T = q.shape[-2]
            expect(tuple(out.shape) == tuple(v.shape), f"{label}: out has shape {tuple(out.shape)}")
            expect(tuple(weights.shape) == tuple(q.shape[:-1]) + (T,), f"{label}: weights have shape "
                   f"{tuple(weights.shape)}")
            expect(out.dtype == q.dtype and weights.dtype == q.dtype, f"{label}: the results are not {q.dtype}")
            close_torch(weights.sum(dim=-1), torch.ones(q.shape[:-1], dtype=q.dtype), atol=tol, rtol=tol,
                        what=f"{label}: the row sums of the weights")
            close_torch(out, weights @ v, atol=tol, rtol=tol, what=f"{label}: out against weights @ v")
            _, shifted = r.tensor_pair(h_shift, f"rope_attention on {label}, positions moved by 25")
            close_torch(shifted, weights, atol=tol, rtol=tol, what=f"{label}: weights after moving every position")
            _, same = r.tensor_pair(h_same, f"rope_attention on {label}, every token at one position")
            plain = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            close_torch(same, plain, atol=tol, rtol=tol, what=f"{label}: weights with every token at one position")

    return judge


def test_alibi_bias(p):
    calls = [(T, H, p.call("alibi_bias", T, H))
             for T, H in [(5, 4), (1, 1), (7, 2), (3, 8), (9, 16), (12, 4), (6, 1), (4, 32)]
             + [(int(p.rng.integers(2, 13)), 2 ** int(p.rng.integers(0, 6))) for _ in range(3)]]  # fresh sizes
    errors = [(T, H, p.call("alibi_bias", T, H)) for T, H in [(5, 6), (4, 3), (4, 12), (4, 5)]]

    def judge(r):
        for T, H, h in calls:
            what = f"alibi_bias({T}, {H})"
            got = expect_tensor(r, h, what, (H, T, T), torch.float32)
            close_torch(got.double(), reference_alibi(T, H), atol=1e-6, rtol=1e-6, what=what)
        for T, H, h in errors:
            expect_number_error(r, h, f"alibi_bias({T}, {H})", H)

    return judge


CHECKS = {
    "test_sinusoidal_encoding": test_sinusoidal_encoding,
    "test_apply_rope": test_apply_rope,
    "test_apply_rope_positions": test_apply_rope_positions,
    "test_alibi_bias": test_alibi_bias,
    "test_is_permutation_equivariant": test_is_permutation_equivariant,
    "test_rope_attention": test_rope_attention,
}
