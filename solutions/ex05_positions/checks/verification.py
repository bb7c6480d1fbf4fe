"""The checks of ex05_positions (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run. A failed check's message is what the student
reads in the feedback: which function, on what input, how far off and the
likely cause, never the expected numbers.

``sinusoidal_encoding``, ``apply_rope`` and ``alibi_bias`` are called on the
visible examples and on inputs of the hidden tests' shapes, and compared with
references computed here in float64, with the hidden tests' tolerances; a few
sizes are drawn afresh for each run (a table of answers for the tests' own
sizes does not pass). ``is_permutation_equivariant`` is given layers built
from the classes of the notebook's locked ``layers`` cell (``Tokenwise``,
``AddPositions``, ...), with weights and position tables drawn here; whether
each layer is equivariant is known here from how it was built, and the
student's answer must agree; a recorded layer counts the reordered inputs it
was called on (``num_trials``). ``rope_attention`` is judged by the properties
its hidden tests check, computed here from the returned tensors: rows that
sum to 1, an output that is the weights times the untouched values, weights
unchanged when every position moves by the same amount, and plain attention
when every token is at one position.
"""

import math

import torch

from tools.verification.probes import Fail, Nested, Recorded, as_tensor, close_torch, expect


# --- references, and the usual mistakes as variants of them -------------------------------------------------------


def reference_encoding(T, D, start=0, exponent=-2.0, layout="pairs"):
    """The sinusoidal encoding in float64. ``exponent`` is the power of 10000 that pair i turns at, times D / (2i)
    (the task's -2i/D is -2.0); ``layout`` "pairs" (sin, cos interleaved), "swapped", "blocks" or "columns"
    (every column its own frequency 10000**(-j/D))."""
    t = torch.arange(start, start + T, dtype=torch.float64)[:, None]
    if layout == "columns":
        j = torch.arange(D, dtype=torch.float64)
        angles = t / 10000.0 ** (j / D)
        return torch.where(j % 2 == 0, angles.sin(), angles.cos())
    i = torch.arange(D // 2, dtype=torch.float64)
    angles = t * 10000.0 ** (exponent * i / D)  # (T, D/2)
    if layout == "blocks":
        return torch.cat([angles.sin(), angles.cos()], dim=1)
    first, second = (angles.cos(), angles.sin()) if layout == "swapped" else (angles.sin(), angles.cos())
    return torch.stack([first, second], dim=-1).reshape(T, D)


ENCODING_MISTAKES = [
    (dict(layout="swapped"), "Sine and cosine look swapped: column 2i holds the sine, column 2i+1 the cosine."),
    (dict(layout="blocks"), "The sines fill the first half of each row and the cosines the second: they should "
                            "alternate, the sine of pair i in column 2i and its cosine in column 2i+1."),
    (dict(layout="columns"), "Every column turns at its own frequency: columns 2i and 2i+1 share one angle, "
                             "t / 10000**(2i/D)."),
    (dict(start=1), "The rows look like positions 1 to T: positions start at 0, torch.arange(T)."),
    (dict(exponent=-1.0), "The frequencies look like 10000**(-i/D): the exponent is 2i/D, and torch.arange(0, D, 2) "
                          "counts 2i."),
    (dict(exponent=-4.0), "The frequencies look like 10000**(-4i/D): torch.arange(0, D, 2) already counts 2i, so it "
                          "is not doubled again."),
    (dict(exponent=2.0), "The angle looks like t multiplied by 10000**(2i/D): it is t divided by it."),
]


def encoding_cause(got, T, D):
    return next((cause for variant, cause in ENCODING_MISTAKES
                 if torch.allclose(got, reference_encoding(T, D, **variant), atol=1e-4, rtol=0)), "")


def reference_rope(x, positions, base=10000.0, exponent=-2.0, sign=1.0, halves=False):
    """RoPE from its definition, in float64, pair by pair. The variants: pair i turns at base**(exponent * i / d)
    (the task's -2i/d is -2.0), clockwise (``sign`` -1), or the pairs are (i, i + d/2) (``halves``)."""
    x = x.double()
    out = torch.empty_like(x)
    d = x.shape[-1]
    for i in range(d // 2):
        theta = sign * torch.as_tensor(positions).double() * base ** (exponent * i / d)
        c, s = theta.cos()[:, None], theta.sin()[:, None]
        first, second = (i, i + d // 2) if halves else (2 * i, 2 * i + 1)
        a, b = x[..., first:first + 1], x[..., second:second + 1]
        out[..., first:first + 1] = a * c - b * s
        out[..., second:second + 1] = a * s + b * c
    return out


def rope_cause(got, x, positions, base, default_positions):
    """The usual mistake that ``got`` (float64) matches, in words, or ""."""
    T = x.shape[-2]
    mistakes = [
        (dict(sign=-1.0), "The pairs turn clockwise: out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i] sin + "
                          "x[2i+1] cos."),
        (dict(halves=True), "It rotates the pairs (i, i + d/2), the \"rotate half\" convention: here the pairs are "
                            "neighbours, x[..., 0::2] with x[..., 1::2]."),
        (dict(exponent=-1.0), "The frequencies look like base**(-i/d): the exponent is 2i/d, and torch.arange(0, d, "
                              "2) counts 2i."),
        (dict(exponent=-4.0), "The frequencies look like base**(-4i/d): torch.arange(0, d, 2) already counts 2i, so "
                              "it is not doubled again."),
        (dict(exponent=2.0), "The frequencies look like base**(+2i/d): they are base**(-2i/d), which turn more slowly "
                             "for later pairs."),
    ]
    if base != 10000.0:
        mistakes.append((dict(base=10000.0), "It is the rotation for base 10000: use the base argument."))
    for variant, cause in mistakes:
        if torch.allclose(got, reference_rope(x, positions, **{"base": base, **variant}), atol=1e-4, rtol=1e-4):
            return cause
    if default_positions and torch.allclose(got, reference_rope(x, torch.arange(1, T + 1), base), atol=1e-4):
        return "It is rotated by the angles of positions 1 to T: positions start at 0, torch.arange(T)."
    if not default_positions and torch.allclose(got, reference_rope(x, torch.arange(T), base), atol=1e-4):
        return "It is rotated by positions 0, 1, ..., T-1: each row must be rotated by its own entry of positions."
    if x.dtype == torch.float64 and torch.allclose(got, reference_rope(x, positions, base), atol=1e-4, rtol=1e-4):
        return ("It is right to float32's precision only: for float64 input, compute the angles, their cosines and "
                "sines in float64.")
    return ""


def reference_alibi(T, H):
    slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, dtype=torch.float64) / H)
    offset = (torch.arange(T)[None, :] - torch.arange(T)[:, None]).double()
    return (slopes[:, None, None] * offset).masked_fill(offset > 0, float("-inf"))


def alibi_cause(bias, T, H):
    """The likely mistake behind a wrong (H, T, T) bias, in words (the visible test's diagnoses), or ""."""
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    ahead = bias[:, future]
    if ahead.numel() and not torch.isneginf(ahead).all():
        if torch.isneginf(bias[:, future.T]).all():
            return ("The -inf are below the diagonal: rows are queries i, columns keys j, and the future is j > i, "
                    "above the diagonal.")
        if (ahead == 0).all():
            return "The future keys (j > i) get 0, so a query could attend to later tokens: they should get -inf."
        if (ahead < -1e8).all():
            return ("The future keys get large negative numbers: use float('-inf'), which the softmax turns into a "
                    "weight of exactly 0.")
        if (ahead < 0).all():
            return ("The future keys get finite penalties, as if the distance counted on both sides: every future "
                    "key gets -inf, however near.")
        return "Every entry of a future key (j > i, above the diagonal) should be -inf."
    diagonal = bias[:, torch.arange(T), torch.arange(T)]
    if torch.isneginf(diagonal).all():
        return "The -inf cover the diagonal too: a query may attend to its own position (j = i), where the bias is 0."
    if not (diagonal == 0).all():
        return "The diagonal should be 0: a query and the key at its own position are at distance 0."
    if T > 1:
        slopes = -bias[:, 1, 0]
        h = torch.arange(H, dtype=torch.float64)
        if (slopes <= 0).any():
            return ("The entries of past keys should be negative, -m_h (i - j), a penalty that grows with the "
                    "distance: did you add the distance instead of subtracting it?")
        if H > 1 and torch.allclose(slopes, 2.0 ** (-8 * (H - h) / H), rtol=1e-5, atol=0):
            return "The slopes are in reverse order: head 0 is the steepest, m_0 = 2**(-8/H)."
        if torch.allclose(slopes, 2.0 ** (-8 * h / H), rtol=1e-5, atol=0):
            return "The slopes start at 2**0 = 1: h counts from 0, so head h has the exponent -8 (h+1) / H."
    return ""


# --- helpers for the judges ----------------------------------------------------------------------------------------


def expect_number_error(r, handle, what, number):
    """A ValueError whose message names ``number`` on its own (the notebook's expect_value_error)."""
    import re

    error = r.raised(handle)
    expect(error is not None, f"{what} should raise ValueError, but it returned normally.")
    expect(error.is_a("ValueError"), f"{what} should raise ValueError, but it raised {error.type}: "
                                     f"{error.message[:200]}")
    expect(re.search(rf"(?<![\w.]){number}(?!\w|\.\d)", error.message) is not None,
           f"The ValueError of {what} should name {number}; it says: {error.message[:200]}")


def expect_tensor(r, handle, what, shape, dtype, hint=""):
    got = r.tensor(handle, what)
    expect(tuple(got.shape) == tuple(shape),
           f"{what} should have shape {tuple(shape)}, but it has shape {tuple(got.shape)}.")
    expect(got.dtype == dtype, f"{what} returns {got.dtype}; it should return {dtype}. {hint}".rstrip())
    return got


def close_explained(got, ref, *, atol, rtol, what, on="", explain, otherwise=""):
    """close_torch, whose cause is ``explain()`` (the usual mistake that ``got`` matches, worked out only when it
    fails), else ``otherwise``."""
    try:
        close_torch(got, ref, atol=atol, rtol=rtol, what=what, on=on)
    except Fail:
        close_torch(got, ref, atol=atol, rtol=rtol, what=what, on=on, cause=explain() or otherwise)


def as_input_at(r, handle, index, what):
    """The ``index``-th argument a probe sent back (its ``after``), as it was after the call."""
    return as_tensor(r.after(handle, index), what)


# --- the checks ----------------------------------------------------------------------------------------------------


def test_sinusoidal_encoding(p):
    sizes = [(6, 8), (1, 2), (7, 64), (50, 16), (100, 6), (33, 10), (12, 2)]
    sizes += [(int(p.rng.integers(2, 101)), 2 * int(p.rng.integers(1, 33))) for _ in range(3)]  # fresh sizes
    calls = [(T, D, p.call("sinusoidal_encoding", T, D)) for T, D in sizes]
    errors = [(T, D, p.call("sinusoidal_encoding", T, D)) for T, D in [(4, 7), (3, 5), (10, 1), (2, 33)]]

    def judge(r):
        for T, D, h in calls:
            what = f"sinusoidal_encoding({T}, {D})"
            got = expect_tensor(r, h, what, (T, D), torch.float32,
                                "Computing in float64 is fine: convert the table at the end with .to(torch.float32).")
            close_explained(got.double(), reference_encoding(T, D), atol=1e-4, rtol=0, what=what,
                            on="a size the visible test does not use" if (T, D) != (6, 8) else "",
                            explain=lambda: encoding_cause(got.double(), T, D),
                            otherwise="It is compared with the encoding computed in float64, absolute tolerance "
                                      "1e-4.")
        for T, D, h in errors:
            expect_number_error(r, h, f"sinusoidal_encoding({T}, {D}), an odd D,", D)

    return judge


def test_apply_rope(p):
    x_visible = torch.tensor([[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]] * 4)
    cases = [("the visible example", x_visible, 10000.0, p.call("apply_rope", x_visible)),
             ("the visible example, base=100.0", x_visible, 100.0, p.call("apply_rope", x_visible, base=100.0))]
    for shape, base in [((5, 8), 10000.0), ((3, 7, 4), 10000.0), ((2, 3, 6, 10), 10000.0), ((1, 2), 10000.0),
                        ((2, 4, 9, 16), 500.0), ((4, 12, 6), 10.0)]:
        x = p.randn(*shape)
        cases.append((f"a random x of shape {shape}, base={base}", x, base, p.call("apply_rope", x, base=base)))
    errors = [(T, d, p.call("apply_rope", torch.zeros(T, d))) for T, d in [(3, 5), (4, 3), (2, 9)]]

    def judge(r):
        for label, x, base, h in cases:
            what = f"apply_rope on {label}"
            got = expect_tensor(r, h, what, x.shape, torch.float32,
                                "It should return the dtype of x: build the result with torch.empty_like(x).")
            positions = torch.arange(x.shape[-2])
            close_explained(got.double(), reference_rope(x, positions, base), atol=1e-4, rtol=1e-4, what=what,
                            explain=lambda: rope_cause(got.double(), x, positions, base, True),
                            otherwise="It is compared with RoPE computed in float64, atol=rtol=1e-4.")
        for T, d, h in errors:
            expect_number_error(r, h, f"apply_rope on x of shape ({T}, {d}), an odd d,", d)

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
            what = f"apply_rope on a {x.dtype} x of shape {tuple(x.shape)} with positions {positions.tolist()}"
            got = expect_tensor(r, h, what, x.shape, x.dtype,
                                "Convert the cosines and sines to x.dtype, and build the result with "
                                "torch.empty_like(x).")
            expect(torch.equal(as_input_at(r, h, 0, what), x),
                   f"{what} changed its input x. Write the result into a new tensor (torch.empty_like(x)): the "
                   "caller may still need the unrotated vectors.")
            default = torch.equal(positions, torch.arange(x.shape[-2]))
            close_explained(got.double(), reference_rope(x, positions), atol=tol, rtol=tol, what=what,
                            explain=lambda: rope_cause(got.double(), x, positions, 10000.0, default),
                            otherwise=f"It is compared with RoPE computed in float64, atol=rtol={tol:g}.")

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


VISIBLE_LAYERS = ["Tokenwise", "AddPositions", "AddToSequences", "PlainAttention",
                  "AddPositions with a table that reads the same backwards"]


def visible_cause(verdicts):
    """The visible test's diagnosis of its five layers' verdicts (``verdicts``: name -> answer)."""
    truths = dict(zip(VISIBLE_LAYERS, [True, False, True, True, False]))
    wrong = [name for name in VISIBLE_LAYERS if verdicts[name] != truths[name]]
    if len(set(verdicts.values())) == 1:
        return (f"It answers {verdicts[wrong[0]]} for every layer: does it compare the two sides at all, for every "
                "permutation?")
    if verdicts["AddPositions"] and not verdicts["AddToSequences"]:
        return ("It tells apart layers that treat sequences differently, not positions: is the permutation applied "
                "to axis 0 (the sequences of the batch) instead of axis 1 (the tokens)?")
    if wrong == ["AddPositions with a table that reads the same backwards"]:
        return ("This layer is unchanged by reversing the tokens but sees positions all the same: try the random "
                "permutations too, not the reversal alone.")
    if wrong == ["PlainAttention"]:
        return ("Attention returns a pair (out, weights): judge it by its first item, out, and compare with "
                "torch.allclose(..., atol=atol), not exactly (reordered tokens add up in another order, and the "
                "two sides differ by rounding errors of about 1e-7).")
    if not verdicts["Tokenwise"]:
        return ("Tokenwise works on each token alone, so it is equivariant: compare layer(x[:, perm]) with "
                "layer(x)[:, perm], the same perm on both sides, along the token axis.")
    return ""


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
    add("AddPositions with a table that reads the same backwards", add_positions(mirror(p, 6, 4)), x, False)
    visible = cases[:]
    slight = 1e-3 * torch.rand(6, 4, generator=p.gen)
    add("AddPositions with entries below 1e-3, atol=1e-2", add_positions(slight), x, True, atol=1e-2)
    add("AddPositions with entries below 1e-3, the default atol=1e-5", add_positions(slight), x, False)
    for B, T, D in [(1, 7, 3), (3, 9, 5), (2, 5, 6)]:
        x = p.randn(B, T, D)
        add("Tokenwise with another output width", tokenwise(p, D, 2 * D), x, True)
        add("causal PlainAttention", Nested("PlainAttention", p.randn(D, 6), True), x, False)
        add("PlainAttention", Nested("PlainAttention", p.randn(D, 3 * D)), x, True)
        add("a mirror-symmetric AddPositions, then PlainAttention",
            Nested("Chain", add_positions(mirror(p, T, D)), Nested("PlainAttention", p.randn(D, 6))), x, False)
        add("a mirror-symmetric AddPositions, num_trials=5", add_positions(mirror(p, T, D)), x, False, num_trials=5)
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
    # Two tokens: the reversal is the only reordering, and a mirror-symmetric table gives both the same vector.
    x = p.randn(3, 2, 4)
    add("AddPositions whose two rows are equal", add_positions(p.randn(1, 4).expand(2, 4).contiguous()), x, True)
    add("AddPositions whose two rows differ, num_trials=1", add_positions(p.randn(2, 4)), x, False, num_trials=1)
    # num_trials is used: the reversal and num_trials random orders make num_trials + 1 reordered inputs.
    x = p.randn(2, 10, 3)
    counted = [(trials, x, p.call("is_permutation_equivariant", Recorded(tokenwise(p, 3, 3)), x,
                                  num_trials=trials, after=(0, 1)))
               for trials in (0, 7)]

    def verdict_of(r, label, shape, x, h):
        what = f"is_permutation_equivariant for {label} (x of shape {shape}, {x.dtype})"
        verdict = r.value(h, what)
        expect(isinstance(verdict, bool), f"{what} returned a {type(verdict).__name__}; it should return True or "
                                          "False, a bool. Use torch.allclose, which returns a bool, or bool(...).")
        expect(torch.equal(as_input_at(r, h, 0, what), x), f"{what} changed its input x.")
        return what, verdict

    def judge(r):
        verdicts = {label: verdict_of(r, label, shape, x, h)[1] for label, shape, x, truth, h in visible}
        wrong = [label for label, _, _, truth, _ in visible if verdicts[label] != truth]
        expect(not wrong, f"is_permutation_equivariant is wrong for {', '.join(wrong)} on the visible test's "
                          f"layers. {visible_cause(verdicts)}".rstrip())
        for label, shape, x, truth, h in cases[len(visible):]:
            what, verdict = verdict_of(r, label, shape, x, h)
            expect(verdict == truth, f"{what} returned {verdict}; this layer is{'' if truth else ' not'} "
                                     "permutation equivariant" + (
                                         ", to within atol. Compare with torch.allclose(..., atol=atol)."
                                         if "atol" in label or "1e-7" in label else "."))
        for trials, x, h in counted:
            what = f"is_permutation_equivariant for Tokenwise with num_trials={trials}"
            verdict = r.value(h, what)
            expect(verdict is True, f"{what} returned {verdict}; this layer is permutation equivariant.")
            inputs = r.after(h, 0)
            expect(isinstance(inputs, list), f"{what}: the layer's inputs were not recorded.")
            reordered = sum(1 for item in inputs if not torch.equal(as_tensor(item, what), x))
            expect(reordered >= trials + 1,
                   f"With num_trials={trials}, is_permutation_equivariant called the layer on {reordered} reordered "
                   f"input(s), but it should try the reversal and then num_trials random orders. Does it use its "
                   "num_trials argument?")

    return judge


def plain_cause(same, scores, q, v, tol):
    """Why the weights with every token at one position are not plain attention's, in words."""
    for width, cause in [(1, "They match the scores without the 1/sqrt(d) scale."),
                         (v.shape[-1], "They match scores scaled by sqrt(d_v): scale by sqrt(d), d the width of q and "
                                       "k.")]:
        if torch.allclose(same, torch.softmax(scores / math.sqrt(width), dim=-1).to(q.dtype), atol=tol, rtol=tol):
            return cause
    return ("With every token at one position the rotation changes no dot product, so the weights should be those "
            "of plain attention, softmax(q k^T / sqrt(d)). Are q and k both rotated, by the positions given?")


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
        probes.append((label, q, k, v, positions, tol,
                       p.call("rope_attention", q, k, v, positions=positions),
                       p.call("rope_attention", q, k, v, positions=positions + 25),
                       p.call("rope_attention", q, k, v, positions=same)))

    def judge(r):
        for label, q, k, v, positions, tol, h, h_shift, h_same in probes:
            what = f"rope_attention on {label}"
            out, weights = r.tensor_pair(h, what)
            T = q.shape[-2]
            expect(tuple(out.shape) == tuple(v.shape),
                   f"The output of {what} should have shape {tuple(v.shape)}, the shape of v; it has shape "
                   f"{tuple(out.shape)}.")
            expect(tuple(weights.shape) == tuple(q.shape[:-1]) + (T,),
                   f"The weights of {what} should have shape {tuple(q.shape[:-1]) + (T,)}; they have shape "
                   f"{tuple(weights.shape)}.")
            expect(out.dtype == q.dtype and weights.dtype == q.dtype,
                   f"{what} returns {out.dtype} and {weights.dtype}; both should be {q.dtype}, the dtype of q.")
            close_torch(weights.sum(dim=-1), torch.ones(q.shape[:-1], dtype=q.dtype), atol=tol, rtol=tol,
                        what="The row sums of the weights of rope_attention", on=label,
                        cause=f"Each query's weights (a row, over the keys) should sum to 1: is the softmax taken "
                              f"over the last axis? (atol=rtol={tol:g})")
            close_torch(out, weights @ v, atol=tol, rtol=tol, what="The output of rope_attention", on=label,
                        cause=f"It should be weights @ v, with the values not rotated: only the queries and the "
                              f"keys get positions. (atol=rtol={tol:g})")
            _, shifted = r.tensor_pair(h_shift, f"{what}, every position moved by 25")
            close_torch(shifted, weights, atol=tol, rtol=tol, what="The weights of rope_attention",
                        on=f"{label}, every position moved by 25",
                        cause="They should not change: RoPE's scores depend only on the distance between a query's "
                              "and a key's positions. Are both q and k rotated, with the same positions? "
                              f"(atol=rtol={tol:g})")
            _, same = r.tensor_pair(h_same, f"{what}, every token at one position")
            scores = q.double() @ k.double().transpose(-2, -1)
            plain = torch.softmax(scores / math.sqrt(q.shape[-1]), dim=-1).to(q.dtype)
            close_explained(same, plain, atol=tol, rtol=tol, what="The weights of rope_attention",
                            on=f"{label}, every token at one position",
                            explain=lambda: f"{plain_cause(same, scores, q, v, tol)} (atol=rtol={tol:g})")
            if label == "the visible example's shapes":
                expect(not torch.allclose(weights, plain, atol=1e-3),
                       f"With positions 0, ..., {T - 1} the weights of {what} are those of plain attention, as if no "
                       "position were used: rotate the queries and the keys with apply_rope, passing the positions "
                       "on.")

    return judge


def test_alibi_bias(p):
    calls = [(T, H, p.call("alibi_bias", T, H))
             for T, H in [(5, 4), (1, 1), (7, 2), (3, 8), (9, 16), (12, 4), (6, 1), (4, 32)]
             + [(int(p.rng.integers(2, 13)), 2 ** int(p.rng.integers(0, 6))) for _ in range(3)]]  # fresh sizes
    errors = [(T, H, p.call("alibi_bias", T, H)) for T, H in [(5, 6), (4, 3), (4, 12), (4, 5)]]

    def judge(r):
        for T, H, h in calls:
            what = f"alibi_bias({T}, {H})"
            got = r.tensor(h, what)
            expect(tuple(got.shape) == (H, T, T),
                   f"{what} should have shape (num_heads, T, T) = {(H, T, T)}, but it has shape {tuple(got.shape)}."
                   + (" Each head has its own slope and needs its own (T, T) matrix." if got.dim() < 3 else ""))
            expect(got.dtype == torch.float32, f"{what} returns {got.dtype}; it should return torch.float32, the "
                                               "dtype of the scores it is added to.")
            close_explained(got.double(), reference_alibi(T, H), atol=1e-6, rtol=1e-6, what=what,
                            explain=lambda: alibi_cause(got.double(), T, H),
                            otherwise="It is compared with the bias computed in float64, atol=rtol=1e-6.")
        for T, H, h in errors:
            expect_number_error(r, h, f"alibi_bias({T}, {H}), with {H} heads, not a power of two,", H)

    return judge


CHECKS = {
    "test_sinusoidal_encoding": test_sinusoidal_encoding,
    "test_apply_rope": test_apply_rope,
    "test_apply_rope_positions": test_apply_rope_positions,
    "test_alibi_bias": test_alibi_bias,
    "test_is_permutation_equivariant": test_is_permutation_equivariant,
    "test_rope_attention": test_rope_attention,
}
