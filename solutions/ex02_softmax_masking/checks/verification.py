"""The checks of ex02_softmax_masking (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/assignments/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verification/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Each check asks what its cell's visible tests
ask, on the public examples, and then what they cannot: other shapes, dims
and dtypes, extreme scores, long packed rows, prefixes and windows at their
limits. Error messages are checked on the checks' own bad inputs. A failed
check's message is what the student reads in the feedback: which function,
on what input, how far off and the likely cause, never the expected values.
"""

import torch

from tools.verification.probes import as_tensor, close_torch, diagnosis, expect

# The likely mistakes these checks name, by code: what the mistake is, and the chapter section that teaches it
# (the instructor's report, instructor/report.md). The codes every check may report are in probes.GENERAL_CAUSES.
CAUSES = {
    "log_of_softmax": ("takes the log of a softmax whose small weights round to 0",
                       "ch04_softmax_masking: The stable form: subtract the row maximum"),
    "no_max_shift": ("exponentiates without subtracting each slice's own maximum",
                     "ch04_softmax_masking: The naive formula overflows"),
    "ignores_dim": ("normalises over the last dimension whatever dim says",
                    "ch04_softmax_masking: Softmax"),
    "offset": ("every entry off by the same amount: the maximum or the log of the sum left out",
               "ch04_softmax_masking: Adding a constant changes nothing"),
    "no_keepdim": ("the maximum or the sum taken without keepdim=True",
                   "ch04_softmax_masking: Padding masks, and broadcasting over batch and heads"),
    "changes_dtype": ("returns another dtype than its input's",
                      "ch04_softmax_masking: The stable form: subtract the row maximum"),
    "modifies_input": ("changes its input in place", "ch04_softmax_masking: The stable form: subtract the row maximum"),
    "calls_torch": ("calls torch's ready-made function instead of writing it", "ch04_softmax_masking: Softmax"),
    "mask_not_bool": ("a mask that is not boolean", "ch04_softmax_masking: PyTorch's two boolean conventions"),
    "mask_shape": ("a mask of the wrong shape", "ch04_softmax_masking: Causal masks"),
    "mask_reads_ahead": ("a mask that lets a query read a later key", "ch04_softmax_masking: Causal masks"),
    "mask_crosses_sequences": ("a packed mask that lets attention cross a sequence boundary",
                               "ch04_softmax_masking: Padding masks, and broadcasting over batch and heads"),
    "mask_blocks_allowed": ("a mask that hides a key the query may see", "ch04_softmax_masking: Causal masks"),
    "mask_sink_missing": ("a window mask that hides a sink",
                          "ch04_softmax_masking: Causal masks"),
    "mask_window_off": ("a window mask that hides a key inside the window (too narrow, or without the query itself)",
                        "ch04_softmax_masking: Causal masks"),
    "mask_window_edge": ("a window mask that keeps a key just past the window and the sinks (the window one too "
                         "wide, or one sink too many)", "ch04_softmax_masking: Causal masks"),
    "mask_window_too_wide": ("a window mask one key too wide: it keeps the key a whole window back from the query",
                             "ch04_softmax_masking: Causal masks"),
    "mask_sink_too_many": ("a window mask that keeps one sink too many", "ch04_softmax_masking: Causal masks"),
    "prefix_hidden": ("a prefix-LM mask that hides part of the prompt, or shows the continuation",
                      "ch04_softmax_masking: Causal masks"),
    "empty_sequences": ("fails on empty sequences",
                        "ch04_softmax_masking: Padding masks, and broadcasting over batch and heads"),
    "integer_dtypes": ("fails on lengths of a small integer dtype",
                       "ch04_softmax_masking: Padding masks, and broadcasting over batch and heads"),
}

# The tolerances of the log-softmax, by dtype (its values reach the thousands: rtol matters).
TOL = {torch.float16: dict(atol=2e-2, rtol=2e-3),
       torch.float32: dict(atol=2e-5, rtol=1e-5),
       torch.float64: dict(atol=1e-12, rtol=1e-10)}


def expect_value_error(r, handle, what, mentions=(), hint=""):
    """The probe raised a ValueError whose message contains every text of ``mentions``."""
    error = r.raised(handle)
    expect(error is not None, f"{what} should raise ValueError, but it returned normally. {hint}".rstrip(),
           cause="no_validation")
    expect(error.is_a("ValueError"),
           f"{what} should raise ValueError, but it raised {error.type}: {error.message[:200]}. {hint}".rstrip(),
           cause="wrong_exception")
    missing = [m for m in mentions if m not in error.message]
    expect(not missing, f"{what} raised ValueError, but its message should name what was allowed and what arrived "
                        f"(it should mention {' and '.join(missing)}). It says: {error.message[:200]}",
           cause="vague_error")


def expect_mask(r, handle, reference, what, explain):
    """A boolean tensor equal to ``reference``; otherwise the first wrong cells, with ``explain(i, j)`` for one."""
    got = r.tensor(handle, what)
    expect(got.dtype == torch.bool, f"{what} should be a boolean tensor, but it has dtype {got.dtype}: build it from "
                                    "comparisons, or with dtype=torch.bool.", cause="mask_not_bool")
    expect(tuple(got.shape) == tuple(reference.shape),
           f"{what} should have shape {tuple(reference.shape)}, but it has shape {tuple(got.shape)}.",
           cause="mask_shape")
    wrong = (got != reference).nonzero().tolist()
    if wrong:
        i, j = wrong[0]
        expect(False, f"{what} is wrong at {len(wrong)} of {reference.numel()} (query, key) cells, the first at "
                      f"({i}, {j}): it is {bool(got[i, j])} there, but {explain(i, j)}.")


# --- stable_log_softmax -------------------------------------------------------------------------------------------

ROUNDED_AWAY = ("Never form the small weights themselves: log(softmax) is -inf wherever the softmax rounds to 0. "
                "The log of the stable softmax is (x - m) minus the log of a sum that is at least 1.")


def log_softmax_cause(got, x, dim):
    """The likely cause of a wrong log-softmax, from what the result shows."""
    if not bool(torch.isfinite(got[torch.isfinite(x)]).all()):
        if bool(torch.isneginf(got).any()):
            return diagnosis("log_of_softmax", ROUNDED_AWAY)
        return diagnosis("no_max_shift", "Subtract the maximum of each slice along dim, x.amax(dim=dim, keepdim=True), before you "
                "exponentiate: e^x overflows for large scores, and a slice far below a global maximum sums to 0.")
    ref = torch.log_softmax(x.double(), dim=dim)
    off = (got.double() - ref).abs() > 1e-3 * (1.0 + ref.abs())
    if bool(off.any()) and bool((ref[off] < -20.0).all()):  # only the weights below e^-20 are wrong: they were formed
        return diagnosis("log_of_softmax", ROUNDED_AWAY)
    shift = (got.double() - ref).nan_to_num(0.0)
    if float(shift.std()) > 1e-3 and dim % x.ndim != x.ndim - 1:
        return diagnosis("ignores_dim", f"Pass dim={dim} to the maximum and to the sum, not only dim=-1.")
    if float((shift - shift.mean()).abs().max()) < 1e-3 * max(1.0, float(ref.abs().max())):
        return diagnosis("offset", "Every entry is off by about the same amount: did you leave out m, or the log of "
                                   "the sum?")
    if x.ndim and float((shift - shift.mean(dim=dim, keepdim=True)).abs().max()) < 1e-3 * max(1.0, float(ref.abs().max())):
        return diagnosis("offset", "Every entry of a slice is off by the same amount: did you leave out that slice's "
                                   "maximum m, or the log of its sum?")
    return diagnosis("no_keepdim", "Keep the maximum and the sum as slices with keepdim=True, so that they line up with the slice they "
            "belong to.")


def test_stable_log_softmax(p):
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
    h_x = p.call("stable_log_softmax", x, after=(0,))
    h_tiny = p.call("stable_log_softmax", torch.tensor([0.0, -200.0]))
    h_half = p.call("stable_log_softmax", torch.tensor([10.0, 11.0, 12.0], dtype=torch.float16), dim=0)
    h_calls = p.call("ready_made_calls", "stable_log_softmax", x)   # the helper cell's, as the visible test asks

    randn = p.randn
    far_rows = torch.stack([randn(5) + 1000.0, randn(5) - 1000.0, randn(5)])
    underflow = randn(3, 6, scale=3.0)
    underflow[:, 1:3] -= 300.0                       # weights near e^-300: 0 in float32, ordinary logs
    masked = randn(4, 5)
    masked[0, 1] = masked[2, 0] = masked[2, 4] = masked[3, 3] = float("-inf")
    half_wide = (randn(3, 6, scale=6.0) - 10.0).half()
    half_wide[:, 0] += 30.0                          # float16 weights near e^-30: below float16's smallest
    cases = [
        ("a random (4, 4) matrix", randn(4, 4), -1),
        ("a non-square (3, 7) matrix, dim=0", randn(3, 7, scale=3), 0),
        ("a (2, 3, 5) tensor, dim=1", randn(2, 3, 5, scale=2), 1),
        ("a (2, 3, 5) tensor, dim=-2", randn(2, 3, 5, scale=2), -2),
        ("a (2, 3, 4, 5) tensor, dim=2", randn(2, 3, 4, 5), 2),
        ("a 1-D tensor of 6 scores", randn(6), 0),
        ("a (4, 1) tensor (a single key)", randn(4, 1), -1),
        ("scores spread over thousands", randn(4, 6, scale=2000), -1),
        ("rows far apart (near +1000, near -1000, near 0)", far_rows, -1),
        ("columns far apart, dim=0", far_rows.T.contiguous(), 0),
        ("scores 300 below the others, whose weights float32 rounds to 0", underflow, -1),
        ("scores with some entries -inf (masked)", masked, -1),
        ("float16 scores", randn(4, 6, scale=4).half(), -1),
        ("float16 scores whose smallest weights float16 rounds to 0", half_wide, -1),
        ("float64 scores", randn(3, 5, scale=5, dtype=torch.float64), -1),
    ]
    hidden = [(name, x_, dim, torch.log_softmax(x_.double(), dim=dim).to(x_.dtype),
               p.call("stable_log_softmax", x_, dim=dim, after=(0,))) for name, x_, dim in cases]

    def judge(r):
        lw = r.tensor(h_x, "stable_log_softmax(x)")
        expect(tuple(lw.shape) == (3, 3) and lw.dtype == torch.float32,
               f"stable_log_softmax(x) for a float32 x of shape (3, 3) returned shape {tuple(lw.shape)} and dtype "
               f"{lw.dtype}; it should keep both.")
        expect(torch.equal(as_tensor(r.after(h_x, 0), "x"), x),
               "stable_log_softmax(x) changed its input: compute new tensors instead of x -= m.", cause="modifies_input")
        close_torch(lw, torch.log_softmax(x, dim=-1), **TOL[torch.float32], what="stable_log_softmax(x)",
                    on="the visible (3, 3) example", cause=log_softmax_cause(lw, x, -1))
        tiny = r.tensor(h_tiny, "stable_log_softmax([0, -200])")
        expect(bool(torch.isfinite(tiny).all()), f"stable_log_softmax([0, -200]) contains inf or NaN. {ROUNDED_AWAY}",
               cause="log_of_softmax")
        half = r.tensor(h_half, "stable_log_softmax of float16 scores")
        expect(half.dtype == torch.float16 and bool(torch.isfinite(half).all()),
               "stable_log_softmax of the float16 scores [10, 11, 12] should be finite float16 numbers.",
               cause="changes_dtype" if half.dtype != torch.float16 else "no_max_shift")
        for name, x_, dim, ref, h in hidden:
            got = r.tensor(h, f"stable_log_softmax for {name}")
            expect(got.shape == x_.shape, f"stable_log_softmax should keep the shape {tuple(x_.shape)} of x for "
                                          f"{name}, but it returned shape {tuple(got.shape)}: take the maximum and "
                                          "the sum along dim with keepdim=True.", cause="no_keepdim")
            expect(got.dtype == x_.dtype, f"stable_log_softmax returned {got.dtype} for {name}, whose dtype is "
                                          f"{x_.dtype}: keep the dtype of x.", cause="changes_dtype")
            expect(torch.equal(as_tensor(r.after(h, 0), "x"), x_),
                   f"stable_log_softmax changed its input x for {name}: compute new tensors instead.",
                   cause="modifies_input")
            infinite = torch.isneginf(x_)
            expect(bool(torch.isneginf(got[infinite]).all()) and bool(torch.isfinite(got[~infinite]).all()),
                   f"stable_log_softmax for {name}: " + (
                       "the masked (-inf) scores should give -inf and every other entry stay finite. "
                       if bool(infinite.any()) else "every entry should be finite. ")
                   + log_softmax_cause(got, x_, dim))
            finite = ~infinite
            close_torch(got[finite], ref[finite], **TOL[x_.dtype], what="stable_log_softmax", on=name,
                        cause=log_softmax_cause(got, x_, dim))
        called = r.value(h_calls, "ready_made_calls('stable_log_softmax', x)")
        expect(isinstance(called, list) and all(isinstance(c, str) for c in called),
               "The helper ready_made_calls did not answer with a list of names: run the helpers cell unchanged.")
        expect(not called, f"stable_log_softmax calls torch's {called[0] if called else ''}. The task is to write it "
                           "yourself, with torch.exp, a sum and torch.log.", cause="calls_torch")

    return judge


# --- packed_causal_mask -------------------------------------------------------------------------------------------


def reference_packed(lengths):
    owner = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths, dtype=torch.long))
    T = len(owner)
    return (owner[:, None] == owner[None, :]) & torch.ones(T, T, dtype=torch.bool).tril()


def packed_explainer(lengths):
    owner = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths, dtype=torch.long)).tolist()

    def explain(i, j):
        if owner[i] != owner[j]:
            return diagnosis("mask_crosses_sequences", f"query {i} belongs to sequence {owner[i]} and key {j} to sequence {owner[j]}: no attention "
                    "crosses a sequence boundary (check where each sequence starts, with empty sequences too)")
        if j > i:
            return diagnosis("mask_reads_ahead",
                             f"key {j} comes after query {i} in the same sequence: a causal mask never reads ahead")
        return diagnosis("mask_blocks_allowed",
                         f"key {j} is at or before query {i} in the same sequence ({owner[i]}), so it is allowed")

    return explain


def test_packed_causal_mask(p):
    rng = p.rng
    visible = [[3, 2], [4], [1, 1, 1], [2, 0, 1]]
    lengths_cases = [[int(n) for n in rng.integers(1, 7, size=5)],
                     [0, int(rng.integers(2, 6)), 0, 0, int(rng.integers(1, 5)), 0],
                     [int(rng.integers(5, 12))],
                     [1] * int(rng.integers(4, 9)),
                     [int(n) for n in rng.integers(0, 25, size=24)]]          # a long row, up to ~570 tokens
    cases = [(lengths, p.call("packed_causal_mask", lengths)) for lengths in visible + lengths_cases]
    as_tensor_case = lengths_cases[0]
    h_tensor = p.call("packed_causal_mask", torch.tensor(as_tensor_case))
    # Every sequence empty: a row of no tokens, as a list and as a tensor.
    empty = [0] * int(rng.integers(1, 4))
    h_empty = [(f"packed_causal_mask({empty})", p.call("packed_causal_mask", empty)),
               (f"packed_causal_mask(torch.tensor({empty}))", p.call("packed_causal_mask", torch.tensor(empty)))]
    # Lengths in every integer dtype the task names.
    small = [int(n) for n in rng.integers(0, 6, size=5)]
    small[int(rng.integers(0, 5))] = 0
    small[int(rng.integers(0, 5))] = int(rng.integers(1, 6))
    h_dtypes = [(dtype, p.call("packed_causal_mask", torch.tensor(small, dtype=dtype)))
                for dtype in (torch.int32, torch.int16, torch.int8, torch.uint8)]
    bad = [int(n) for n in rng.integers(1, 5, size=4)]
    bad[2] = -int(rng.integers(1, 4))
    h_bad = p.call("packed_causal_mask", bad)
    h_bad_int8 = p.call("packed_causal_mask", torch.tensor(bad, dtype=torch.int8))
    not_integers = [(torch.tensor([n > 0 for n in small]), "torch.bool"),
                    (torch.tensor(small, dtype=torch.float32) + 0.5, "torch.float32")]
    h_types = [(t, name, p.call("packed_causal_mask", t)) for t, name in not_integers]

    def judge(r):
        for lengths, h in cases:
            expect_mask(r, h, reference_packed(lengths), f"packed_causal_mask({lengths})", packed_explainer(lengths))
        expect_mask(r, h_tensor, reference_packed(as_tensor_case),
                    f"packed_causal_mask(torch.tensor({as_tensor_case})), lengths given as a tensor",
                    packed_explainer(as_tensor_case))
        for what, h in h_empty:
            error = r.raised(h)
            expect(error is None, f"{what}, a row whose sequences are all empty, raised {error}. An empty sequence "
                                  "is allowed, and so is a row of them: it holds no token, and its mask is (0, 0)."
                   if error else "", cause="empty_sequences")
            expect_mask(r, h, torch.zeros(0, 0, dtype=torch.bool), f"{what} (every sequence empty)",
                        lambda i, j: "there is no token")
        for dtype, h in h_dtypes:
            what = f"packed_causal_mask(torch.tensor({small}, dtype={dtype}))"
            error = r.raised(h)
            expect(error is None, f"{what} raised {error}. Lengths may come in any integer dtype: convert them to "
                                  "torch.long before you use them." if error else "", cause="integer_dtypes")
            expect_mask(r, h, reference_packed(small), f"{what}, lengths of dtype {dtype}", packed_explainer(small))
        expect_value_error(r, h_bad, f"packed_causal_mask({bad})", mentions=[str(bad[2])],
                           hint="A negative length is a mistake by the caller.")
        expect_value_error(r, h_bad_int8, f"packed_causal_mask(torch.tensor({bad}, dtype=torch.int8))",
                           mentions=[str(bad[2])], hint="A negative length is a mistake by the caller, in any dtype.")
        for t, name, h in h_types:
            what = f"packed_causal_mask(torch.tensor({t.tolist()}))"
            error = r.raised(h)
            expect(error is not None, f"{what}, a tensor of dtype {name}, returned a mask; it should raise TypeError: "
                                      "such a tensor holds no lengths (converting it reads True as 1, 2.5 as 2).",
                   cause="no_validation")
            expect(error.is_a("TypeError"), f"{what}, a tensor of dtype {name}, raised {error.type}; it should raise "
                                            "TypeError, which says the argument has the wrong type.",
                   cause="wrong_exception")
            expect(name in error.message or name.split(".")[1] in error.message,
                   f"{what} raised TypeError, but its message should name the dtype that arrived, {name}. "
                   f"It says: {error.message[:200]}", cause="vague_error")

    return judge


# --- prefix_lm_mask -----------------------------------------------------------------------------------------------


def reference_prefix(n, prefix_len):
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    return (k <= q) | (k < prefix_len)


def prefix_explainer(n, prefix_len):
    def explain(i, j):
        if j < prefix_len:
            return diagnosis("prefix_hidden",
                             f"key {j} is in the prompt (the first {prefix_len} tokens), which every query may see")
        if j > i:
            where = "in the prompt" if i < prefix_len else "in the continuation"
            return diagnosis("prefix_hidden", f"key {j} is in the continuation and comes after query {i} ({where}): "
                                              "nobody may read ahead there")
        return diagnosis("mask_blocks_allowed", f"key {j} is at or before query {i}, so it is allowed")

    return explain


def test_prefix_lm_mask(p):
    rng = p.rng
    n = int(rng.integers(6, 12))
    pairs = [(5, 2), (4, 0), (3, 3), (n, int(rng.integers(1, n))), (n, 0), (n, n), (1, 0), (1, 1),
             (int(rng.integers(40, 70)), int(rng.integers(5, 30)))]
    cases = [(m, k, p.call("prefix_lm_mask", m, k)) for m, k in pairs]
    bad = [(5, 7), (5, -1), (n, n + int(rng.integers(1, 4))), (n, -int(rng.integers(1, 4)))]
    errors = [(m, k, p.call("prefix_lm_mask", m, k)) for m, k in bad]

    def judge(r):
        for m, k, h in cases:
            expect_mask(r, h, reference_prefix(m, k), f"prefix_lm_mask({m}, {k})", prefix_explainer(m, k))
        for m, k, h in errors:
            expect_value_error(r, h, f"prefix_lm_mask({m}, {k})", mentions=[str(m), str(k)],
                               hint="prefix_len must lie between 0 and n.")

    return judge


# --- sink_window_mask ---------------------------------------------------------------------------------------------


def reference_sink_window(n, window, sinks):
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    return (k <= q) & ((q - k < window) | (k < sinks))


def kept_too_many(got, reference):
    """The (query, key) cells ``got`` keeps and ``reference`` hides, if ``got`` is a boolean mask of its shape."""
    if not isinstance(got, torch.Tensor) or got.dtype != torch.bool or got.shape != reference.shape:
        return []
    return (got & ~reference).nonzero().tolist()


def sink_explainer(n, window, sinks, kept=()):
    """``kept``: every cell the mask keeps but should hide, to tell a window one too wide from one sink too many."""

    def edge_cause():
        too_wide = bool(kept) and all(i - j == window for i, j in kept)
        one_sink = bool(kept) and all(j == sinks for i, j in kept)
        if too_wide != one_sink:  # (one cell alone can be both)
            return "mask_window_too_wide" if too_wide else "mask_sink_too_many"
        return "mask_window_edge"

    def explain(i, j):
        if j > i:
            return diagnosis("mask_reads_ahead", f"key {j} comes after query {i}: not even a sink may be read ahead")
        if i - j < window:
            return diagnosis("mask_window_off", f"key {j} is {i - j} position(s) back from query {i}, inside its window of {window} (the window "
                    "counts the query itself)")
        if j < sinks:
            return diagnosis("mask_sink_missing",
                             f"key {j} is one of the first {sinks} tokens, a sink that every later query keeps")
        return diagnosis(edge_cause() if i - j == window or j == sinks else "other",
                         f"key {j} is {i - j} positions back from query {i}, outside its window of {window}, and "
                         "not a sink")

    return explain


def test_sink_window_mask(p):
    rng = p.rng
    n = int(rng.integers(9, 16))
    triples = [(8, 3, 2), (6, 2, 0), (5, 5, 1), (n, int(rng.integers(2, 5)), int(rng.integers(1, 4))),
               (n, 1, int(rng.integers(1, 4))), (n, 1, 0), (n, n + 2, 2), (n, 3, n), (n, int(rng.integers(2, 5)), 0),
               (int(rng.integers(60, 90)), int(rng.integers(5, 20)), 4)]
    cases = [(t, p.call("sink_window_mask", *t)) for t in triples]
    bad = [((6, 0, 1), "0"), ((6, 2, -1), "-1"), ((n, -int(rng.integers(1, 4)), 2), None),
           ((n, 3, -int(rng.integers(2, 5))), None)]
    errors = [(t, str(t[1]) if word is None and t[1] < 1 else str(t[2]) if word is None else word,
               p.call("sink_window_mask", *t)) for t, word in bad]

    def judge(r):
        for t, h in cases:
            reference = reference_sink_window(*t)
            kept = kept_too_many(r.tensor(h, f"sink_window_mask{t}"), reference)
            expect_mask(r, h, reference, f"sink_window_mask{t}", sink_explainer(*t, kept=kept))
        for t, word, h in errors:
            expect_value_error(r, h, f"sink_window_mask{t}", mentions=[word],
                               hint="window must be at least 1 and sinks at least 0.")

    return judge


CHECKS = {
    "test_stable_log_softmax": test_stable_log_softmax,
    "test_packed_causal_mask": test_packed_causal_mask,
    "test_prefix_lm_mask": test_prefix_lm_mask,
    "test_sink_window_mask": test_sink_window_mask,
}
