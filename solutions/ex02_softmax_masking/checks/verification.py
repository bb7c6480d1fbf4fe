"""The checks of ex02_softmax_masking (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Each check asks what its cell's hidden tests
asked (the same kinds of input, shapes, dtypes, corners and tolerances) and
what its visible tests ask, on the public examples. Error messages are
checked on the hidden tests' own bad inputs. A failed check's message is what
the student reads in the feedback: which function, on what input, how far off
and the likely cause, never the expected values.
"""

import math

import torch
import torch.nn.functional as F

from tools.verification.probes import as_tensor, close_torch, expect, names_shape

# The hidden tests' tolerances, by dtype.
TOL = {torch.float16: dict(atol=1e-3, rtol=1e-3),
       torch.float32: dict(atol=1e-6, rtol=1e-5),
       torch.float64: dict(atol=1e-12, rtol=1e-10)}


def reference_masked_softmax(scores, mask):
    """Softmax of the scores with -inf written into the forbidden cells, rows with no allowed key set to zero."""
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0)


def shape_text(shape):
    return str(tuple(shape))


def expect_unchanged(r, handle, original, what, hint):
    expect(torch.equal(as_tensor(r.after(handle, 0), what), original), f"{what} changed its input. {hint}")


def expect_value_error(r, handle, what, mentions=(), shapes=(), hint=""):
    """The probe raised a ValueError whose message contains every text of ``mentions``
    and names every shape of ``shapes`` (the notebooks' rule)."""
    error = r.raised(handle)
    expect(error is not None, f"{what} should raise ValueError, but it returned normally. {hint}".rstrip())
    expect(error.is_a("ValueError"),
           f"{what} should raise ValueError, but it raised {error.type}: {error.message[:200]}. {hint}".rstrip())
    missing = [m for m in mentions if m not in error.message]
    missing += [shape_text(s) for s in shapes if not names_shape(error.message, s)]
    expect(not missing, f"{what} raised ValueError, but its message should name what was allowed and what arrived "
                        f"(it should mention {' and '.join(missing)}). It says: {error.message[:200]}")


# --- stable_softmax ------------------------------------------------------------------------------------------------

STABLE = ("Subtract the maximum of each slice along dim, x.amax(dim=dim, keepdim=True), before you exponentiate: "
          "one maximum for the whole tensor leaves slices far below it at 0/0, and dividing by e^max after "
          "exponentiating is too late, e^x has already overflowed.")
KEEP_INPUT = "Compute x - m (a new tensor) instead of x -= m or other in-place operations."


def softmax_cause(got, x, dim):
    """The likely cause of a wrong softmax, from what the result shows."""
    tol = 1e-2 if x.dtype == torch.float16 else 1e-4
    sums = got.double().sum(dim=dim)
    if not bool(((sums - 1).abs() <= tol).all()):
        last = x.ndim - 1
        if dim % x.ndim != last and torch.allclose(got.double(), torch.softmax(x.double(), dim=-1), atol=tol):
            return (f"Your weights are normalised over the last dimension, not over dim={dim}: pass dim to every "
                    "reduction, the maximum and the sum.")
        return (f"The slices along dim={dim} do not all sum to 1: take the maximum and the sum along dim, with "
                "keepdim=True.")
    return ("Each slice sums to 1, but the weights within it are off: subtract the maximum of that same slice "
            "(kept with keepdim=True, so that it lines up with its slice), exponentiate with torch.exp, and divide "
            "by the sum along dim.")


def test_stable_softmax(p):
    # The visible examples (public).
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
    t = torch.arange(24.0).reshape(2, 3, 4) % 5
    h_x = p.call("stable_softmax", x, after=(0,))
    h_big = p.call("stable_softmax", x + 1000.0)
    h_far = p.call("stable_softmax", torch.tensor([[0.0, 1.0, 2.0], [-1000.0, -999.0, -998.0]]))
    h_cols = p.call("stable_softmax", x, dim=0)
    h_t1 = p.call("stable_softmax", t, dim=1)
    h_t2 = p.call("stable_softmax", t, dim=-2)
    h_half = p.call("stable_softmax", torch.tensor([10.0, 11.0, 12.0], dtype=torch.float16), dim=0)

    # The hidden tests' kinds of input, with fresh numbers.
    randn = p.randn
    far_rows = torch.stack([randn(5) + 1000.0, randn(5) - 1000.0, randn(5)])
    cases = [
        ("a random (4, 4) matrix", randn(4, 4), -1),
        ("a non-square (3, 7) matrix, dim=1", randn(3, 7, scale=3), 1),
        ("a non-square (3, 7) matrix, dim=0", randn(3, 7, scale=3), 0),
        ("a (2, 3, 5) tensor, dim=0", randn(2, 3, 5, scale=2), 0),
        ("a (2, 3, 5) tensor, dim=1", randn(2, 3, 5, scale=2), 1),
        ("a (2, 3, 5) tensor, dim=-2", randn(2, 3, 5, scale=2), -2),
        ("a (2, 3, 4, 5) tensor, dim=2", randn(2, 3, 4, 5), 2),
        ("a 1-D tensor of 6 scores", randn(6), 0),
        ("a (4, 1) tensor, dim=-1 (a single key)", randn(4, 1), -1),
        ("scores around +800", randn(3, 5) + 800.0, -1),
        ("scores around -800", randn(3, 5) - 800.0, -1),
        ("scores spread over thousands", randn(4, 6, scale=2000), -1),
        ("rows far apart (near +1000, near -1000, near 0)", far_rows, -1),
        ("columns far apart, dim=0", far_rows.T.contiguous(), 0),
        ("float16 scores between about 0 and 100", (randn(4, 6, scale=20) + 50.0).half(), -1),
        ("float16 scores, dim=0", randn(5, 3, scale=8).half(), 0),
        ("float64 scores", randn(3, 5, scale=5, dtype=torch.float64), -1),
    ]
    hidden = [(name, x_, dim, torch.softmax(x_, dim=dim), p.call("stable_softmax", x_, dim=dim, after=(0,)))
              for name, x_, dim in cases]

    def judge(r):
        w = r.tensor(h_x, "stable_softmax(x)")
        expect(tuple(w.shape) == (3, 3), f"stable_softmax(x) for x of shape (3, 3) should have shape (3, 3), but it "
                                         f"has shape {tuple(w.shape)}.")
        expect(w.dtype == torch.float32, f"stable_softmax(x) should have dtype torch.float32, but it has dtype "
                                         f"{w.dtype}. The weights should keep the dtype of x.")
        expect_unchanged(r, h_x, x, "stable_softmax(x)", KEEP_INPUT)
        expect(bool(torch.isfinite(w).all()), f"stable_softmax(x) contains inf or NaN. {STABLE}")
        for i, total in enumerate(w.sum(dim=-1).tolist()):
            expect(math.isclose(total, 1.0, abs_tol=1e-5),
                   f"Row {i} of stable_softmax(x) sums to {total:.4g}, not 1. With dim=-1 each row is normalised on "
                   "its own: did you sum over the wrong dimension, or without keepdim=True?")
        expect(bool((w > 0).all()), "Every softmax weight should be strictly positive: e^s > 0 for every finite score s.")
        for i, j, k in [(0, 2, 0), (2, 0, 1), (2, 2, 1)]:
            ratio = (w[i, j] / w[i, k]).item()
            expect(math.isclose(ratio, math.exp(x[i, j].item() - x[i, k].item()), rel_tol=1e-4),
                   f"In row {i}, weight {j} divided by weight {k} should be e^(x[{i}, {j}] - x[{i}, {k}]); yours is "
                   "not. A softmax depends only on the differences within a row: subtract the same number from "
                   "every entry of a row (its maximum, kept as a column with keepdim=True).")
        big = r.tensor(h_big, "stable_softmax(x + 1000)")
        expect(bool(torch.isfinite(big).all()), "stable_softmax(x + 1000) contains inf or NaN. e^1000 overflows to "
                                                "inf: subtract each row's maximum before you exponentiate.")
        expect(big.shape == w.shape and torch.allclose(big, w, atol=1e-6, rtol=1e-5),
               "Adding 1000 to every score changed the softmax, but only the differences within a row should matter.")
        far = r.tensor(h_far, "stable_softmax of two rows far apart")
        expect(tuple(far.shape) == (2, 3) and bool(torch.isfinite(far).all()),
               "stable_softmax of the rows [0, 1, 2] and [-1000, -999, -998] contains inf or NaN. Subtract each "
               "row's own maximum, x.amax(dim=dim, keepdim=True), not the maximum of the whole tensor: "
               "e^(-1000 - 2) is 0, and 0 / 0 is NaN.")
        expect(torch.allclose(far[0], far[1], atol=1e-6),
               "The rows [0, 1, 2] and [-1000, -999, -998] differ by a constant, so their softmax weights should be "
               "the same; yours differ. Subtract each row's own maximum, not one number for the whole tensor.")
        cols = r.tensor(h_cols, "stable_softmax(x, dim=0)")
        expect(tuple(cols.shape) == (3, 3), f"stable_softmax(x, dim=0) should have shape (3, 3), but it has shape "
                                            f"{tuple(cols.shape)}.")
        for j, total in enumerate(cols.double().sum(dim=0).tolist()):
            expect(math.isclose(total, 1.0, abs_tol=1e-5),
                   f"With dim=0 every column should sum to 1; column {j} sums to {total:.4g}. Pass dim to every "
                   "reduction, the maximum and the sum.")
        t1 = r.tensor(h_t1, "stable_softmax(t, dim=1)")
        expect(tuple(t1.shape) == (2, 3, 4), f"stable_softmax(t, dim=1) for t of shape (2, 3, 4) should have shape "
                                             f"(2, 3, 4), but it has shape {tuple(t1.shape)}.")
        expect(torch.allclose(t1.double().sum(dim=1), torch.ones(2, 4, dtype=torch.float64), atol=1e-5),
               "With dim=1 on a (2, 3, 4) tensor, the 3 entries t[b, :, j] should sum to 1 for every b and j; they "
               "do not.")
        t2 = r.tensor(h_t2, "stable_softmax(t, dim=-2)")
        expect(t2.shape == t1.shape and torch.allclose(t2.double(), t1.double(), atol=1e-6),
               "dim=-2 and dim=1 name the same dimension of a 3-D tensor, but they gave different results.")
        half = r.tensor(h_half, "stable_softmax of float16 scores")
        expect(half.dtype == torch.float16, f"stable_softmax of float16 scores should have dtype torch.float16, but "
                                            f"it has dtype {half.dtype}. float16 in should give float16 out.")
        expect(bool(torch.isfinite(half).all()),
               "stable_softmax of the float16 scores [10, 11, 12] contains inf or NaN. In float16, e^12 is already "
               "above the largest float16 number (65504): subtract the maximum first.")

        for name, x_, dim, ref, h in hidden:
            got = r.tensor(h, f"stable_softmax for {name}")
            expect(got.shape == x_.shape, f"stable_softmax should keep the shape {tuple(x_.shape)} of x for {name}, "
                                          f"but it returned shape {tuple(got.shape)}. Take the maximum and the sum "
                                          "along dim with keepdim=True.")
            expect(got.dtype == x_.dtype, f"stable_softmax returned {got.dtype} for {name}, whose dtype is "
                                          f"{x_.dtype}. The weights should keep the dtype of x: do not convert it.")
            expect_unchanged(r, h, x_, f"stable_softmax for {name}", KEEP_INPUT)
            expect(bool(torch.isfinite(got).all()), f"stable_softmax gave inf or NaN for {name}. {STABLE}")
            close_torch(got, ref, **TOL[x_.dtype], what="stable_softmax", on=name,
                        cause=softmax_cause(got, x_, dim))

    return judge


# --- causal_mask ---------------------------------------------------------------------------------------------------


def causal_cause(got, n):
    """What is wrong with a (n, n) boolean causal mask, in words."""
    i = torch.arange(n)
    sees_future = got & (i[None, :] > i[:, None])
    misses_past = ~got & (i[None, :] < i[:, None])
    misses_self = ~got.diagonal()
    if n > 1 and torch.equal(got, i[None, :] > i[:, None]):
        return ("It is exactly inverted: True where attention is forbidden. In this course True means 'may attend' "
                "(the convention of F.scaled_dot_product_attention).")
    if bool(sees_future.any()) and bool(misses_past.any()):
        return ("Queries see later keys and miss earlier ones: rows are queries and columns are keys; is your "
                "triangle the wrong one (upper instead of lower)?")
    if bool(misses_self.any()):
        return ("It is False on the diagonal, but a token may attend to itself (key index = query index). Check the "
                "diagonal argument of your triangle.")
    if bool(sees_future.any()):
        return "It lets a query see keys that come after it: a causal model must not read ahead."
    if bool(misses_past.any()):
        return "It hides keys that come before the query: a query may attend to every earlier key."
    return ""


def test_causal_mask(p):
    # The visible sizes, the hidden tests' sizes (1, 2, 5, 9, 33, and 6 for the attention check below), and six
    # sizes never seen before: a table of answers for a few known sizes cannot cover them all.
    fresh = [int(n) for n in p.rng.choice([n for n in range(3, 65) if n not in (4, 5, 6, 9, 33)], size=6,
                                          replace=False)]
    sizes = [4, 1, 2, 5, 6, 9, 33, *sorted(fresh)]
    handles = [(n, p.call("causal_mask", n)) for n in sizes]
    q, k, v = p.randn(2, 3, 6, 4), p.randn(2, 3, 6, 4), p.randn(2, 3, 6, 4)
    is_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def judge(r):
        masks = {}
        for n, h in handles:
            got = r.tensor(h, f"causal_mask({n})")
            expect(got.dtype == torch.bool,
                   f"causal_mask({n}) should have dtype torch.bool, but it has dtype {got.dtype}. Return True/False "
                   "values: create the tensor with dtype=torch.bool, or build it from a comparison.")
            expect(tuple(got.shape) == (n, n), f"causal_mask({n}) should have shape ({n}, {n}), but it has shape "
                                               f"{tuple(got.shape)}. The mask should follow n, not a fixed size.")
            i = torch.arange(n)
            wrong = (got != (i[:, None] >= i[None, :])).nonzero().tolist()
            expect(not wrong, f"causal_mask({n}) is wrong at {len(wrong)} (query, key) entries, the first at "
                              f"{tuple(wrong[0]) if wrong else ''}. {causal_cause(got, n)}".rstrip())
            masks[n] = got
        # The mask must do in attention what is_causal=True does. Tolerance: atol=1e-6, rtol=1e-5 (float32).
        close_torch(F.scaled_dot_product_attention(q, k, v, attn_mask=masks[6]), is_causal, atol=1e-6, rtol=1e-5,
                    what="Attention with attn_mask=causal_mask(6)", on="random (2, 3, 6, 4) queries, keys and values",
                    cause="It should do what is_causal=True does.")

    return judge


# --- padding_mask --------------------------------------------------------------------------------------------------


def padding_reference(lengths, max_len):
    return torch.arange(max_len)[None, :] < torch.as_tensor(lengths)[:, None]


def lengths_text(lengths):
    """How a lengths argument is described in a message (never its values)."""
    if isinstance(lengths, list):
        return f"a Python list of {len(lengths)} lengths"
    kind = "an int32 tensor" if lengths.dtype == torch.int32 else "a tensor"
    return f"{kind} of {len(lengths)} lengths"


def padding_cause(got, lengths, max_len):
    """The likely cause of a wrong padding mask, from what the result shows."""
    ref = padding_reference(lengths, max_len)
    if torch.equal(got, ~ref):
        return "The mask looks inverted: True must mark the real tokens and False the padding."
    if torch.equal(got, torch.arange(max_len)[None, :] <= torch.as_tensor(lengths)[:, None]):
        return "Off by one? Position j is real when j < length, since positions start at 0."
    return "Compare each position j with the length of its own sequence: entry [b, j] is True when j < lengths[b]."


def test_padding_mask(p):
    # The visible examples (public).
    visible = torch.tensor([3, 1, 4])
    h_visible = p.call("padding_mask", visible, 5)
    h_list = p.call("padding_mask", [2, 0], 3)

    # The hidden tests' kinds of input, with fresh lengths: a full and an empty sequence, a single one, int32,
    # a Python list, all empty, and a larger batch.
    rng = p.rng
    lengths_a = torch.from_numpy(rng.integers(0, 6, size=4))
    where = rng.choice(4, size=2, replace=False)
    lengths_a[int(where[0])], lengths_a[int(where[1])] = 5, 0
    lengths_c = torch.from_numpy(rng.integers(0, 10, size=5)).to(torch.int32)
    lengths_c[int(rng.integers(0, 5))] = 0
    max_len_b = int(rng.integers(2, 10))
    cases = [
        (lengths_a, 5),
        (torch.tensor([int(rng.integers(0, 2))]), 1),
        (lengths_c, 9),
        ([int(n) for n in rng.integers(0, max_len_b + 1, size=2)], max_len_b),
        ([0, 0], int(rng.integers(1, 6))),
        (torch.from_numpy(rng.integers(0, 13, size=8)), 12),
    ]
    hidden = [(lengths, max_len, p.call("padding_mask", lengths, max_len)) for lengths, max_len in cases]
    errors = [
        ([2, 6, 1], 4, ["6", "4"]),
        ([3, -1], 3, ["-1"]),
        ([5, 8], 7, ["8", "7"]),
        (torch.tensor([-2, 1]), 4, ["-2"]),
        (torch.tensor([1, 3, 10]), 9, ["10", "9"]),
    ]
    error_handles = [(bad, max_len, words, p.call("padding_mask", bad, max_len)) for bad, max_len, words in errors]

    def judge(r):
        pm = r.tensor(h_visible, "padding_mask(lengths, 5)")
        expect(tuple(pm.shape) != (3, 4), "padding_mask(lengths, 5) has shape (3, 4): its width should be max_len = "
                                          "5, even though the longest sequence has length 4.")
        expect(tuple(pm.shape) == (3, 5), f"padding_mask(lengths, 5) for 3 sequences should have shape (3, 5), but it "
                                          f"has shape {tuple(pm.shape)}. Rows are sequences, columns positions.")
        expect(pm.dtype == torch.bool, f"padding_mask(lengths, 5) should have dtype torch.bool, but it has dtype "
                                       f"{pm.dtype}. Build the mask from a comparison, and keep it boolean.")
        expect(torch.equal(pm, padding_reference(visible, 5)),
               f"padding_mask(lengths, 5) is wrong on the visible example. {padding_cause(pm, visible, 5)}")
        from_list = r.tensor(h_list, "padding_mask([2, 0], 3)")
        expect(tuple(from_list.shape) == (2, 3), f"padding_mask([2, 0], 3) should have shape (2, 3), but it has shape "
                                                 f"{tuple(from_list.shape)}.")
        expect(not bool(from_list[1].any()), "A sequence of length 0 has no real token: its row should be all False.")
        for lengths, max_len, h in hidden:
            label = f"padding_mask(lengths, {max_len}) for {lengths_text(lengths)}"
            got = r.tensor(h, label)
            expect(got.dtype == torch.bool, f"{label} should have dtype torch.bool, but it has dtype {got.dtype}. "
                                            "Build the mask from a comparison, and keep it boolean.")
            shape = (len(lengths), max_len)
            expect(tuple(got.shape) == shape,
                   f"{label} should have shape {shape}, one row per sequence and max_len columns, but it has shape "
                   f"{tuple(got.shape)}." + (" Its width should be max_len, even if every sequence is shorter."
                                             if tuple(got.shape)[:1] == shape[:1] else ""))
            wrong = (got != padding_reference(lengths, max_len)).nonzero().tolist()
            expect(not wrong, f"{label} is wrong at {len(wrong)} (sequence, position) entries, the first at "
                              f"{tuple(wrong[0]) if wrong else ''}. {padding_cause(got, lengths, max_len)}")
        for bad, max_len, words, h in error_handles:
            expect_value_error(r, h, f"padding_mask with a length of {[w for w in words if w != str(max_len)][0]} "
                                     f"and max_len={max_len}",
                               mentions=words, hint="Every length must lie between 0 and max_len.")

    return judge


# --- masked_softmax ------------------------------------------------------------------------------------------------


def masked_problems(got, scores, mask, name):
    """The first thing wrong with masked_softmax's weights that has a known cause, as a Fail; else nothing."""
    full = mask.expand(scores.shape)
    has_key = full.any(dim=-1)
    nan = torch.isnan(got)
    if bool(nan.any()):
        in_empty = bool(nan[~has_key].any()) if bool((~has_key).any()) else False
        expect(False, f"masked_softmax returned NaN for {name}. " + (
            "A row with no allowed key is a softmax of -inf scores, 0/0 = NaN: those rows should be all zeros. "
            "Select zeros for them with torch.where (multiplying by 0 keeps the NaN)." if in_empty and
            not bool(nan[has_key].any()) else
            "Only a row with no allowed key can produce 0/0; did your softmax overflow? Use a softmax that "
            "subtracts the maximum, and zero the rows with no allowed key."))
    empty = got[~has_key]
    if empty.numel() and bool((empty != 0).any()):
        uniform = torch.allclose(empty.double(), torch.full_like(empty.double(), 1 / scores.shape[-1]), atol=1e-3)
        expect(False, f"A row with no allowed key should be all zeros for {name}; yours is not. " + (
            "Its weights are equal, as when every score of the row became the same number (a fill of -1e9): the "
            "query then attends to the keys it must not see. Use float('-inf'), then zero such rows." if uniform else
            "Decide which rows are empty from the mask after broadcasting, and select zeros for them."))
    expect(bool((got[~full] == 0).all()),
           f"A forbidden key got a non-zero weight for {name}: it should be exactly 0. Write float('-inf') into the "
           "forbidden scores (where the mask is False, ~mask) before the softmax; a score multiplied by 0 is still a "
           "score. Broadcast the mask against the scores and take the softmax over the last dimension.")


def masked_cause(got, scores, mask):
    """The likely cause of wrong allowed weights, from what the result shows."""
    has_key = mask.expand(scores.shape).any(dim=-1)
    sums = got.double().sum(dim=-1)[has_key]
    tol = 1e-2 if scores.dtype == torch.float16 else 1e-4
    if sums.numel() and bool((sums < 1 - tol).any()) and bool((sums <= 1 + tol).all()):
        return ("Some rows sum to less than 1, as when the forbidden weights are zeroed after the softmax: mask the "
                "scores before the softmax, so that the allowed keys share all of the weight.")
    if sums.numel() and not bool(((sums - 1).abs() <= tol).all()):
        return ("Rows with an allowed key should sum to 1 over the last dimension (the keys); yours do not: take the "
                "softmax over dim=-1, whatever the number of dimensions.")
    return ("The allowed weights of a row should be the softmax of its allowed scores alone, however large the "
            "forbidden scores are.")


def test_masked_softmax(p):
    # The visible example (public).
    scores = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 9.0, 0.0], [2.0, 1.0, 0.0, -1.0]])
    mask = torch.tensor([[True, True, False, False], [True, False, True, True], [False, False, False, False]])
    h_visible = p.call("masked_softmax", scores, mask, after=(0,))

    # The hidden tests' kinds of input, with fresh numbers.
    gen = p.gen
    s = p.randn(5, 7, scale=3)
    m = torch.rand(5, 7, generator=gen) < 0.6
    m[3] = False
    m[0] = True
    big_masked = torch.where(m, p.randn(5, 7), torch.full((5, 7), 300.0))
    cases = [
        ("a random (5, 7) example with one empty row", s, m),
        ("an all-True mask", s, torch.ones(5, 7, dtype=torch.bool)),
        ("an all-False mask", s, torch.zeros(5, 7, dtype=torch.bool)),
        ("forbidden scores of +300, far above the allowed ones", big_masked, m),
        ("allowed scores in the thousands", 1000.0 * s, m),
        ("a non-square (3, 6) example", p.randn(3, 6), torch.rand(3, 6, generator=gen) < 0.5),
        ("a single key", p.randn(4, 1), torch.tensor([[True], [False], [True], [False]])),
        ("float64 scores", s.double(), m),
    ]
    hidden = [(name, sc, mk, reference_masked_softmax(sc, mk), p.call("masked_softmax", sc, mk, after=(0,)))
              for name, sc, mk in cases]
    in_place = "Use masked_fill, which returns a new tensor, not masked_fill_."

    def judge(r):
        w = r.tensor(h_visible, "masked_softmax(scores, mask) with scores and mask of shape (3, 4)")
        expect(tuple(w.shape) == (3, 4), f"masked_softmax(scores, mask) for scores of shape (3, 4) should have shape "
                                         f"(3, 4), but it has shape {tuple(w.shape)}.")
        expect(w.dtype == torch.float32, f"masked_softmax(scores, mask) should have dtype torch.float32, but it has "
                                         f"dtype {w.dtype}. The weights should keep the dtype of scores.")
        expect_unchanged(r, h_visible, scores, "masked_softmax(scores, mask)", in_place)
        expect(not (bool((w[mask] == 0).all()) and bool((w[~mask] != 0).any())),
               "masked_softmax gives weight 0 exactly where the mask is True. In this course True means 'may "
               "attend': the keys to block are those where the mask is False (~mask).")
        masked_problems(w, scores, mask, "the visible example")
        expect(bool(torch.isfinite(w).all()), "masked_softmax(scores, mask) contains inf on the visible example.")
        for i in range(2):
            total = w[i].sum().item()
            expect(math.isclose(total, 1.0, abs_tol=1e-5),
                   f"Row {i} sums to {total:.4g}, but its allowed weights should add up to 1. If you mask after the "
                   "softmax, the weight of the forbidden keys goes missing: mask the scores before the softmax "
                   "instead.")
        for i, j, k in [(0, 1, 0), (1, 2, 0), (1, 0, 3)]:
            ratio = (w[i, j] / w[i, k]).item()
            expect(math.isclose(ratio, math.exp(scores[i, j].item() - scores[i, k].item()), rel_tol=1e-4),
                   f"In row {i}, the allowed weights {j} and {k} should be in the ratio e^(scores[{i}, {j}] - "
                   f"scores[{i}, {k}]), as in a softmax of the allowed scores alone; yours are not.")
        for name, sc, mk, ref, h in hidden:
            got = r.tensor(h, f"masked_softmax for {name}")
            expect(got.shape == sc.shape, f"masked_softmax should keep the shape {tuple(sc.shape)} of the scores for "
                                          f"{name}, but it returned shape {tuple(got.shape)}.")
            expect(got.dtype == sc.dtype, f"masked_softmax returned {got.dtype} for {name}, whose scores are "
                                          f"{sc.dtype}. The weights should keep the dtype of scores.")
            expect_unchanged(r, h, sc, f"masked_softmax for {name}", in_place)
            masked_problems(got, sc, mk, name)
            # Tolerance: atol=1e-6, rtol=1e-5 (float32 and float64).
            close_torch(got, ref, atol=1e-6, rtol=1e-5, what="masked_softmax", on=name,
                        cause=masked_cause(got, sc, mk))

    return judge


def test_masked_softmax_broadcast(p):
    # The visible example, exactly as the notebook builds it (public).
    gen0 = torch.Generator().manual_seed(0)
    scores4 = torch.randn(2, 3, 4, 4, generator=gen0)
    keys_real = torch.tensor([[True, True, True, False], [True, True, False, False]]).view(2, 1, 1, 4)
    pattern = torch.tensor([[True, False, False, False], [True, True, False, True],
                            [False, False, True, True], [True, True, True, True]])
    visible_masks = [("(Tq, Tk)", pattern), ("(B, 1, 1, Tk)", keys_real), ("(B, 1, Tq, Tk)", keys_real & pattern)]
    h_visible = [(label, mk, p.call("masked_softmax", scores4, mk, after=(0,))) for label, mk in visible_masks]
    half_scores = (4.0 * torch.randn(3, 5, generator=gen0)).half()
    half_mask = torch.tensor([[True, True, False, True, False], [False, False, False, False, False],
                              [True, False, False, False, False]])
    h_half = p.call("masked_softmax", half_scores, half_mask)
    h_visible_error = p.call("masked_softmax", torch.zeros(2, 4), torch.ones(3, 4, dtype=torch.bool))

    # The hidden tests' constructions, with fresh numbers. Against F.scaled_dot_product_attention: with the
    # identity as values, its output is the weights themselves. Non-square: Tq = 5 queries, Tk = 6 keys;
    # padding (B, 1, 1, Tk) & a (Tq, Tk) band, with an empty row.
    gen = p.gen
    B, H, Tq, Tk, d = 2, 3, 5, 6, 8
    q, k = p.randn(B, H, Tq, d), p.randn(B, H, Tk, d)
    pad = (torch.arange(Tk)[None, :] < torch.tensor([6, 2])[:, None]).view(B, 1, 1, Tk)
    band = torch.arange(Tk)[None, :] <= torch.arange(Tq)[:, None] + 1
    band[4] = torch.arange(Tk) >= 3       # query 4 sees keys 3..5 only: all padding in sequence 1
    mask = pad & band                     # (B, 1, Tq, Tk)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    eye = torch.eye(Tk).expand(B, H, Tk, Tk)
    sdpa_weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    h_sdpa = p.call("masked_softmax", scores, mask)
    cases = [
        ("a (Tq, Tk) mask on (B, H, Tq, Tk) scores", scores, band),
        ("a (B, 1, 1, Tk) mask", scores, pad),
        ("a per-head (1, H, 1, Tk) mask", scores, torch.rand(1, H, 1, Tk, generator=gen) < 0.5),
        ("a 1-D (Tk,) mask", scores, torch.tensor([True, False, True, True, False, True])),
        ("large scores with a broadcast mask", 1000.0 * scores, mask),
        ("a 3-D (B, Tq, Tk) batch without heads", scores[:, 0].contiguous(), mask[:, 0].contiguous()),
    ]
    hidden = [(name, s, m, reference_masked_softmax(s, m.expand(s.shape)), p.call("masked_softmax", s, m))
              for name, s, m in cases]
    # float16 with left padding combined with a causal mask: the first queries of sequence 1 see nothing.
    T = 5
    left = (torch.arange(T)[None, :] >= torch.tensor([0, 3])[:, None]).view(2, 1, 1, T)
    causal = torch.arange(T)[None, :] <= torch.arange(T)[:, None]
    h_mask = left & causal
    h_scores = p.randn(2, 2, T, T, scale=6).half()
    h_big = p.randn(2, 2, T, T, scale=40).half()
    h_half_left = p.call("masked_softmax", h_scores, h_mask)
    h_half_big = p.call("masked_softmax", h_big, h_mask)
    # Training: the gradient with respect to the scores must be finite, even with empty rows.
    h_grad = p.grad("masked_softmax", scores, mask, weight=p.randn(*scores.shape))
    bad_shapes = [((4, 4), (2, 4, 4)), ((2, 3, 4, 4), (2, 5)), ((3, 6), (6, 3))]
    h_errors = [(s, m, p.call("masked_softmax", torch.zeros(s), torch.ones(m, dtype=torch.bool)))
                for s, m in bad_shapes]

    def judge(r):
        for label, mk, h in h_visible:
            w4 = r.tensor(h, f"masked_softmax with scores of shape (2, 3, 4, 4) and a {label} mask")
            expect(tuple(w4.shape) == (2, 3, 4, 4), f"masked_softmax with a {label} mask should have shape "
                                                    f"(2, 3, 4, 4), but it has shape {tuple(w4.shape)}. The result "
                                                    "has the shape of scores.")
            expect_unchanged(r, h, scores4, f"masked_softmax with a {label} mask", "Avoid in-place operations.")
            full = mk.expand(2, 3, 4, 4)
            has_key = full.any(dim=-1)
            expect(not bool(torch.isnan(w4).any()), f"With a {label} mask, masked_softmax returned NaN.")
            expect(bool((w4[~has_key] == 0).all()),
                   f"With a {label} mask, a row with no allowed key is not all zeros. Which rows are empty depends "
                   "on the mask after broadcasting; an equal fill value in every cell of such a row gives uniform "
                   "weights instead of zeros.")
            expect(bool((w4[~full] == 0).all()),
                   f"With a {label} mask, some forbidden keys got non-zero weight. Broadcast the mask against the "
                   "scores, and take the softmax over the last dimension (the keys).")
            sums = w4.sum(dim=-1)
            expect(len((has_key & ((sums - 1).abs() > 1e-5)).nonzero()) == 0,
                   f"With a {label} mask, a row with an allowed key does not sum to 1. Mask the scores before the "
                   "softmax, and take the softmax over the last dimension (dim=-1), whatever the number of "
                   "dimensions.")
        hw = r.tensor(h_half, "masked_softmax of float16 scores")
        expect(hw.dtype == torch.float16, f"masked_softmax of float16 scores should have dtype torch.float16, but it "
                                          f"has dtype {hw.dtype}. float16 in should give float16 out.")
        expect(tuple(hw.shape) == (3, 5), f"masked_softmax of float16 scores of shape (3, 5) returned shape "
                                          f"{tuple(hw.shape)}.")
        expect(not bool(torch.isnan(hw).any()),
               "masked_softmax returned NaN for float16 scores. A row with no allowed key must give zeros in every "
               "dtype. (float16 rounds numbers below about 6e-8, such as an epsilon of 1e-9, to 0.)")
        expect(bool((hw[~half_mask] == 0).all()), "With float16 scores, some forbidden keys got non-zero weight.")
        expect(bool((hw[1] == 0).all()), "With float16 scores, the row with no allowed key (row 1) should be all zeros.")
        expect(abs(hw[0].float().sum().item() - 1) < 1e-2 and abs(hw[2].float().sum().item() - 1) < 1e-2,
               "With float16 scores, the rows with an allowed key should sum to 1 (within 1e-2 in float16).")
        expect_value_error(r, h_visible_error, "masked_softmax(scores (2, 4), mask (3, 4))", shapes=((2, 4), (3, 4)),
                           hint="Check the shapes yourself before using the mask.")

        # Tolerance: atol=1e-5, rtol=1e-4 (float32, two different computations).
        close_torch(r.tensor(h_sdpa, "masked_softmax with a (2, 1, 5, 6) mask"), sdpa_weights, atol=1e-5, rtol=1e-4,
                    what="masked_softmax",
                    on="(2, 3, 5, 6) scores with a (2, 1, 5, 6) padding-and-band mask and a row with no allowed key",
                    cause="Its weights should be those of F.scaled_dot_product_attention with the same boolean mask, "
                          "and zeros in the row with no allowed key.")
        for name, s, m, ref, h in hidden:
            got = r.tensor(h, f"masked_softmax for {name}")
            expect(got.shape == s.shape, f"masked_softmax should keep the shape {tuple(s.shape)} of the scores for "
                                         f"{name}, but it returned shape {tuple(got.shape)}.")
            masked_problems(got, s, m, name)
            # Tolerance: atol=1e-6, rtol=1e-5 (float32).
            close_torch(got, ref, atol=1e-6, rtol=1e-5, what="masked_softmax", on=name,
                        cause=masked_cause(got, s, m))
        on_left = "float16 (2, 2, 5, 5) scores with left padding and a causal mask (some rows allow no key)"
        got = r.tensor(h_half_left, f"masked_softmax for {on_left}")
        expect(got.dtype == torch.float16, f"masked_softmax should return float16 for float16 scores, but it returned "
                                           f"{got.dtype}.")
        expect(not bool(torch.isnan(got).any()), f"masked_softmax returned NaN for {on_left}. A row with no allowed "
                                                 "key must give zeros in every dtype.")
        # Tolerance: atol=rtol=1e-3 (float16).
        close_torch(got, reference_masked_softmax(h_scores, h_mask), atol=1e-3, rtol=1e-3, what="masked_softmax",
                    on=on_left, cause=masked_cause(got, h_scores, h_mask))
        on_big = "large float16 scores (in the hundreds) with left padding and a causal mask"
        got = r.tensor(h_half_big, f"masked_softmax for {on_big}")
        close_torch(got, reference_masked_softmax(h_big, h_mask), atol=1e-3, rtol=1e-3, what="masked_softmax",
                    on=on_big, cause=masked_cause(got, h_big, h_mask))
        grad = r.value(h_grad, "The gradient of masked_softmax with respect to the scores")
        expect(grad is not None, "masked_softmax gives no gradient with respect to the scores: compute the weights "
                                 "from the scores with differentiable operations, without detaching them.")
        expect(bool(torch.isfinite(as_tensor(grad, "The gradient of masked_softmax")).all()),
               "The gradient of masked_softmax with respect to the scores contains inf or NaN (the mask leaves a "
               "row without an allowed key): a model trained with it would break. Fill the forbidden scores with "
               "masked_fill and select the zeros of empty rows with torch.where, whose gradients stay finite.")
        for s, m, h in h_errors:
            expect_value_error(r, h, f"masked_softmax(scores {s}, mask {m})", shapes=(s, m),
                               hint="A mask that does not broadcast to the shape of scores, or that would make the "
                                    "result larger than scores, must be refused: check with torch.broadcast_shapes.")

    return judge


CHECKS = {
    "test_stable_softmax": test_stable_softmax,
    "test_causal_mask": test_causal_mask,
    "test_padding_mask": test_padding_mask,
    "test_masked_softmax": test_masked_softmax,
    "test_masked_softmax_broadcast": test_masked_softmax_broadcast,
}
