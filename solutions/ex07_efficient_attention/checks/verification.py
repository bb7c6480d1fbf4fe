"""The checks of ex07_efficient_attention (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/assignments/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verification/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Each check asks what its cell's hidden tests
asked and what its visible tests ask, on inputs of the same shapes, with the
same tolerances. A failed check's message is what the student reads in the
feedback: which function, on what input, how far off and the likely cause,
never the expected numbers.

``merge_partials`` is handed parts computed here (the output and the
log-sum-exp of the queries over a slice of the keys) and compared with
attention over all the keys; its tolerance widens with the size of the lse
values, since a float32 lse near 1000 is itself rounded by 6e-5 and every
method, however right, inherits that (``merge_tol``).
``padded_tiled_attention`` is compared with masked attention computed here in
float64 over the whole matrix (``padded_reference``, the notebook's
``padded_attention_reference``). What it runs on the way (no built-in
attention, no tensor as large as a score matrix) is read with the notebook's
``OpRecorder``, through its helper ``recorded_ops``; that cell judges values
only without ``causal``, so that a slip in the causal mask costs the causal
cell alone.

That ``padded_tiled_attention`` never holds the score matrix is also checked
against a limit the sandbox enforces, not one the student's process could
switch off: one causal call on a sequence whose (T, T) matrix of float64
scores alone is larger than the memory of a process
(``p.limits.memory_bytes``: T = 16,500 for the 2 GiB this repository sets).
That run takes seconds, and in the kernel (``p.in_kernel``) it would prove
nothing that verification does not prove again outside it, where the student's
code cannot reach the limit: the hidden tests leave it out, verification
always runs it.

``RollingKVCache`` is driven by the notebook's locked helper
``rolling_history``, which records every append (or the error it raised) so
that an error is reported with the append that raised it.
"""

import math

import torch
import torch.nn.functional as F

from tools.verification.probes import Nested, as_tensor, close_torch, diagnosis, expect

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
# PyTorch's own attention functions: their names contain one of these (the notebook's BUILT_IN_ATTENTION).
BUILT_IN_ATTENTION = ("scaled_dot_product", "multi_head_attention", "flash_attention", "efficient_attention")


def returned(r, handle, what):
    """The probe's value; a failure that names the exception the student's code raised."""
    error = r.raised(handle)
    if error is not None:
        message = error.message.strip()[:300]
        expect(False, f"{what} raised {error.type}" + (f": {message}" if message else "")
               + ("" if message.endswith(".") else "."))
    return r.value(handle, what)


def expect_tensor(r, handle, what, shape, dtype, hint=""):
    got = returned(r, handle, what)
    got = as_tensor(got, what) if _is_array(got) else None
    expect(got is not None, f"{what} should return a torch.Tensor, but it does not.")
    expect(tuple(got.shape) == tuple(shape),
           f"{what} should have shape {tuple(shape)}, but it has shape {tuple(got.shape)}. {hint}".rstrip())
    expect(got.dtype == dtype, f"{what} should return the dtype of its input, {dtype}; it returns {got.dtype}.")
    return got


def _is_array(value):
    return getattr(value, "kind", None) == "Tensor"


def attention_inputs(p, lead, Tq, Tk, dk, dv, dtype=torch.float32):
    return p.randn(*lead, Tq, dk, dtype=dtype), p.randn(*lead, Tk, dk, dtype=dtype), p.randn(*lead, Tk, dv, dtype=dtype)


def same(a, b, tol=1e-5):
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=tol, rtol=tol))


def recorded(r, handle, what):
    """(result, operations) of a probe of the notebook's ``recorded_ops``: each distinct operation (name, shapes
    given, shapes returned, the keyword options that were True) once, in the order of its first run, so that the
    first operation a judge finds is the first the function ran."""
    value = returned(r, handle, what)
    expect(isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[1], list),
           f"{what}: the notebook's helper recorded_ops did not answer; run the helper cell unchanged.")
    return value


def root(d_k):
    """sqrt(d_k) as a message writes it: 3 for 9, sqrt(8) for 8."""
    return f"{math.isqrt(d_k)}" if math.isqrt(d_k) ** 2 == d_k else f"sqrt({d_k})"


# The block size of the long sequence: tiles of 400 x 400 float64 scores (1.2 MiB) stay in a core's cache, and the
# same work takes a fifth less time than in tiles of 1000 x 1000; 16,500 is no multiple of it.
LONG_BLOCK = 400


def long_sequence_length(memory):
    """The smallest round length whose (T, T) matrix of float64 scores alone exceeds ``memory`` bytes."""
    return (math.isqrt(memory // 8) // 100 + 1) * 100 + 100


# --- merge_partials ---------------------------------------------------------------------------------------


def part(q, k, v):
    """(output, lse) of the queries q over the keys k and values v, computed in float64, returned in q's dtype."""
    scores = torch.matmul(q.double(), k.double().mT) / math.sqrt(q.shape[-1])
    return (torch.softmax(scores, dim=-1) @ v.double()).to(q.dtype), torch.logsumexp(scores, dim=-1).to(q.dtype)


def merge_tol(dtype, *lses):
    """The tolerance of a merge of parts whose lse values are ``lses``: the dtype's, or 4 eps |lse| when larger (a
    float32 lse near 1000 is itself rounded by 6e-5, and every method inherits that)."""
    finite = [x[torch.isfinite(x)].abs() for x in lses]
    size = max([float(x.max()) for x in finite if x.numel()] + [0.0])
    return max(TOL[dtype], 4 * torch.finfo(dtype).eps * size)


def same_lse(got, want, tol):
    """True if got has -inf where want does, and is close to it elsewhere."""
    inf = torch.isinf(want)
    return got.shape == want.shape and torch.equal(torch.isinf(got), inf) and same(got[~inf], want[~inf], tol)


# The likely mistakes these checks name, by code: what the mistake is, and the chapter section that teaches it
# (the instructor's report, instructor/report.md). The codes every check may report are in probes.GENERAL_CAUSES.
ONE_PASS = "ch09_efficient_attention: The softmax in one pass"
TILES = "ch09_efficient_attention: Attention tile by tile"
KV_CACHE = "ch09_efficient_attention: Generating text: the KV cache"
SLIDING = "ch09_efficient_attention: Sliding-window attention"
CAUSES = {
    "merge_both_empty_nan": ("NaN where both parts are empty (lse = -inf)", ONE_PASS),
    "merge_one_empty_nan": ("NaN where one part is empty: -inf plus inf", ONE_PASS),
    "merge_overflow": ("e^lse overflows: the larger lse not subtracted first", ONE_PASS),
    "merge_lse_is_max": ("the merged lse taken as the larger of the two", ONE_PASS),
    "merge_empty_part": ("an empty part given weight (a finite number standing in for -inf)", ONE_PASS),
    "merge_averaged": ("the two outputs averaged instead of weighted by their shares", ONE_PASS),
    "merge_broadcast_axis": ("the weights broadcast along the wrong axis", ONE_PASS),
    "flash_nan_no_keys": ("NaN for queries with no key at all", TILES),
    "flash_nan_padding_tile": ("NaN after a tile of nothing but padding", TILES),
    "flash_no_keys_not_zero": ("queries with no key do not return zeros", TILES),
    "flash_not_causal_too": ("wrong without causal=True as well", TILES),
    "flash_padding_ignored": ("the padding mask not applied in every tile", TILES),
    "flash_max_before_mask": ("the tile's maximum taken before the causal mask", TILES),
    "flash_nan_guard_zeros": ("a NaN guard that zeroes queries that have keys", TILES),
    "flash_not_causal": ("no causal mask", "ch04_softmax_masking: Causal masks"),
    "flash_tile_positions": ("positions inside the tile compared instead of positions in the sequence", TILES),
    "flash_padding_columns": ("the wrong columns of the padding mask used in a tile", TILES),
    "flash_padding_inverted": ("True in the padding mask read as “may attend”, the convention of a boolean attn_mask",
                               "ch04_softmax_masking: PyTorch's two boolean conventions"),
    "flash_calls_built_in": ("calls PyTorch's attention instead of computing the tiles", TILES),
    "flash_score_sized_tensor": ("a tensor as large as the whole score matrix made (all the scores, or the whole mask)",
                                 TILES),
    "cache_fails_when_full": ("the cache raises a RuntimeError once it is full: its pieces joined or written along a "
                              "dimension other than -2", KV_CACHE),
    "cache_slot_order": ("the cached positions returned in the order of their slots, not oldest first", SLIDING),
    "cache_stops_when_full": ("a full cache keeps its first positions instead of overwriting the oldest", SLIDING),
    "cache_long_chunk_keeps_first": ("a chunk longer than the window keeps its first positions, not its last", SLIDING),
    "cache_len_counts_all": ("len(cache) counts every position appended, not the ones it holds", SLIDING),
}


def merge_cause(got_out, got_lse, parts, want_out, want_lse, tol):
    """(code, text) of the likely mistake behind a wrong merge (code None if none is recognised)."""
    (oa, la), (ob, lb) = parts
    if not (torch.isfinite(got_out).all() and torch.isfinite(got_lse[torch.isfinite(want_lse)]).all()):
        if (torch.isinf(la) & torch.isinf(lb)).any():
            return (("merge_both_empty_nan", "It contains NaN or inf, and a part here is empty (lse = -inf): where both are -inf, "
                    "-inf - max(-inf, -inf) is NaN. Measure from 0 there, and give an output of 0 where nothing was "
                    "summed."))
        if torch.isinf(la).any() or torch.isinf(lb).any():
            return (("merge_one_empty_nan", "It contains NaN or inf where one part is empty (lse = -inf) and the other is not: -inf plus "
                    "inf is NaN. Measure every lse from the larger of the two, which is finite there, so that the "
                    "empty part's share is e^-inf = 0."))
        return (("merge_overflow", "It contains NaN or inf: e^lse overflows for large lse. Subtract the larger of lse_a and lse_b "
                "before you exponentiate."))
    if same(got_lse, torch.maximum(la, lb), tol) and not same(want_lse, torch.maximum(la, lb), tol):
        return ("merge_lse_is_max", "Your lse is the larger of lse_a and lse_b: the sum over all the keys is e^lse_a + e^lse_b.")
    empty = torch.isinf(la) | torch.isinf(lb)
    if empty.any() and same(got_out[~empty], want_out[~empty], tol):
        return (("merge_empty_part", "It is right where both parts have keys and wrong where one part is empty (lse = -inf): an empty "
                "part holds no weight at all, whatever the other part's lse, even one near -1000. Do not stand in a "
                "finite number for -inf: e^-inf is exactly 0."))
    if same(got_out, (oa + ob) / 2, tol):
        return (("merge_averaged", "The output is the average of the two outputs: each part should weigh by its share of all the "
                "weight, e^lse_a / (e^lse_a + e^lse_b) for part A."))
    if got_out.dim() >= 2 and got_out.shape[-1] == got_out.shape[-2]:
        top = torch.maximum(la, lb).nan_to_num(0.0, neginf=0.0)
        share_a, share_b = torch.exp(la - top), torch.exp(lb - top)
        total = share_a + share_b
        weight_a, weight_b = share_a / total, share_b / total                # (..., Tq)
        along_features = weight_a.unsqueeze(-2) * oa + weight_b.unsqueeze(-2) * ob   # matched to the last axis
        if same(got_out, along_features, tol):
            return (("merge_broadcast_axis", "Here Tq equals d_v, and your output matches (..., Tq) weights broadcast "
                    "against the (..., Tq, d_v) outputs along their last axis, d_v. Give them a last axis of size 1 "
                    "(unsqueeze(-1))."))
    return (None, "Each part should weigh by its share of all the weight, e^lse_a / (e^lse_a + e^lse_b) for part A.")


def test_merge_partials(p):
    calls = []

    def add(label, parts, want, chain=None):
        args = [x for pr in parts for x in pr]
        h = p.call("merge_partials", *args, after=(0, 1, 2, 3))
        calls.append((label, parts, want, h))

    def split_case(label, lead, Tq, sizes, dk, dv, dtype, shift=0.0, scale=1.0):
        q = p.randn(*lead, Tq, dk, dtype=dtype, scale=scale)
        k, v = p.randn(*lead, sum(sizes), dk, dtype=dtype), p.randn(*lead, sum(sizes), dv, dtype=dtype)
        bounds = [0]
        for n in sizes:
            bounds.append(bounds[-1] + n)
        parts = [part(q, k[..., a:b, :], v[..., a:b, :]) for a, b in zip(bounds, bounds[1:])]
        parts = [(o, l + shift) for o, l in parts]
        out, lse = part(q, k, v)
        return parts, (out, lse + shift)

    # The visible test's example: keys 0-3 and 4-8 of 9, then with the lse near 1000, and with empty parts.
    torch.manual_seed(1)
    vq, vk, vv = torch.randn(2, 5, 4), torch.randn(2, 9, 4), torch.randn(2, 9, 3)
    va, vb, vw = part(vq, vk[:, :4], vv[:, :4]), part(vq, vk[:, 4:], vv[:, 4:]), part(vq, vk, vv)
    add("the visible example (keys 0-3 and 4-8 of 9)", [va, vb], vw)
    add("the visible example with lse near 1000", [(va[0], va[1] + 1000), (vb[0], vb[1] + 1000)],
        (vw[0], vw[1] + 1000))
    empty = (torch.zeros(2, 5, 3), torch.full((2, 5), float("-inf")))
    add("the visible example and an empty part (lse = -inf)", [va, empty], va)
    add("two empty parts (lse = -inf on both sides)", [empty, empty], empty)
    # An empty part beside a part whose lse is far from 0, on either side.
    for shift in (1000.0, -1000.0):
        far_b = (vb[0], vb[1] + shift)
        add(f"an empty part A (lse = -inf) and a part B with lse near {shift:+.0f}", [empty, far_b], far_b)
        add(f"a part A with lse near {shift:+.0f} and an empty part B (lse = -inf)", [far_b, empty], far_b)
    for label, lead, Tq, sizes, dk, dv, dtype, shift, scale in [
        ("one query, no leading dimension", (), 1, [3, 5], 4, 2, torch.float32, 0.0, 1.0),
        ("Tq = d_v = 3, no leading dimension", (), 3, [2, 3], 4, 3, torch.float32, 0.0, 1.0),
        ("(B, H, Tq, d) parts of 2 and 11 keys", (2, 3), 6, [2, 11], 8, 5, torch.float32, 0.0, 1.0),
        ("parts of 1 and 1 key", (3,), 4, [1, 1], 4, 4, torch.float32, 0.0, 1.0),
        ("Tq = d_v = 4", (2,), 4, [5, 3], 6, 4, torch.float32, 0.0, 1.0),
        ("scores spread widely (one part dominates)", (2,), 5, [4, 4], 4, 3, torch.float32, 0.0, 8.0),
        ("lse near -1000", (2,), 5, [3, 6], 4, 3, torch.float32, -1000.0, 1.0),
        ("lse near +3000", (1, 2), 3, [7, 2], 4, 3, torch.float32, 3000.0, 1.0),
        ("float64 parts", (2, 2), 5, [6, 4], 8, 3, torch.float64, 0.0, 1.0),
        ("float64 parts with lse near 1000", (2,), 5, [3, 3], 4, 2, torch.float64, 1000.0, 1.0),
    ]:
        parts, want = split_case(label, lead, Tq, sizes, dk, dv, dtype, shift, scale)
        add(label, parts, want)
        if label.startswith("(B, H"):
            add(label + ", in the other order", parts[::-1], want)
    # An lse of -inf for some queries only (their keys in part B all masked).
    parts, want = split_case("partly", (2,), 6, [4, 5], 4, 3, torch.float32)
    (ob, lb) = parts[1]
    lb, ob = lb.clone(), ob.clone()
    lb[:, ::2], ob[:, ::2] = float("-inf"), 0.0
    oa, la = parts[0]
    add("queries 0, 2, 4 with no key in part B (lse_b = -inf there)", [(oa, la), (ob, lb)],
        (torch.where(torch.isinf(lb)[..., None], oa, want[0]), torch.where(torch.isinf(lb), la, want[1])))
    # A chain of three parts, merged two at a time: the second merge is handed the reference's merge of the first
    # two (one slip, one loss), as a student's loop would hand it the first merge's result.
    n = [int(p.rng.integers(1, 6)) for _ in range(3)]
    Tq = int(p.rng.integers(1, 8))
    q, k, v = p.randn(2, Tq, 4), p.randn(2, sum(n), 4), p.randn(2, sum(n), 3)
    first_two = part(q, k[:, :n[0] + n[1]], v[:, :n[0] + n[1]])
    add(f"the first two parts of a chain of {n} keys", [part(q, k[:, :n[0]], v[:, :n[0]]),
                                                        part(q, k[:, n[0]:n[0] + n[1]], v[:, n[0]:n[0] + n[1]])],
        first_two)
    add(f"the third part of a chain of {n} keys, merged into the first two", [first_two,
                                                                            part(q, k[:, n[0] + n[1]:],
                                                                                 v[:, n[0] + n[1]:])],
        part(q, k, v))

    def judge(r):
        for label, parts, (want_out, want_lse), h in calls:
            what = f"merge_partials on {label}"
            value = returned(r, h, what)
            expect(isinstance(value, (tuple, list)) and len(value) == 2,
                   f"{what} should return the pair (out, lse); it returned {type(value).__name__}.")
            got_out, got_lse = (as_tensor(x, what) if _is_array(x) else None for x in value)
            expect(got_out is not None and got_lse is not None, f"{what} should return two tensors (out, lse).")
            expect(tuple(got_out.shape) == tuple(want_out.shape),
                   f"The output of {what} should have shape {tuple(want_out.shape)}; it has {tuple(got_out.shape)}.")
            expect(tuple(got_lse.shape) == tuple(want_lse.shape),
                   f"The lse of {what} should have shape {tuple(want_lse.shape)}, one number per query; it has "
                   f"{tuple(got_lse.shape)}.")
            expect(got_out.dtype == want_out.dtype, f"{what} should keep the dtype {want_out.dtype}.")
            given = [x for pr in parts for x in pr]
            for i in range(4):
                expect(torch.equal(as_tensor(r.after(h, i), what), given[i]),
                       f"{what} changed its inputs: compute new tensors instead of changing them in place.")
            tol = merge_tol(want_out.dtype, *[pr[1] for pr in parts])
            code, cause = (None, "") if same(got_out, want_out, tol) and same_lse(got_lse, want_lse, tol) else \
                merge_cause(got_out, got_lse, parts, want_out, want_lse, tol)
            note = f"(Compared with attention over all the keys at once, atol=rtol={tol:.2g}.)"
            expect(torch.equal(torch.isinf(got_lse), torch.isinf(want_lse)),
                   f"The lse of {what} should be -inf exactly where neither part has a key (and finite elsewhere); "
                   f"it is not. {cause}".rstrip(), cause=code)
            finite = torch.isfinite(want_lse)
            close_torch(got_lse[finite], want_lse[finite], atol=tol, rtol=tol, what="merge_partials' lse", on=label,
                        cause=f"{note} {cause}".rstrip(), code=code)
            close_torch(got_out, want_out, atol=tol, rtol=tol, what="merge_partials' output", on=label,
                        cause=f"{note} {cause}".rstrip(), code=code)

    return judge


# --- padded_tiled_attention -------------------------------------------------------------------------------


def padded_reference(q, k, v, pad, causal=False):
    """Attention that ignores the keys marked True in pad (B, Tk), in float64 over the whole matrix, in q's dtype; a
    query with no key gets zeros (the notebook's padded_attention_reference)."""
    allowed = ~pad[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    scores = torch.matmul(q.double(), k.double().mT) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    return (weights @ v.double()).to(q.dtype)


def padding(p, kind, B, Tk):
    """A (B, Tk) padding mask of the given kind: "none", "right", "left", "mixed" (right, left, none, all and
    scattered, by sequence) or "scattered"."""
    pad = torch.zeros(B, Tk, dtype=torch.bool)
    for b in range(B):
        n = int(p.rng.integers(1, Tk + 1))
        style = {"mixed": ["right", "left", "none", "all", "scattered"][b % 5]}.get(kind, kind)
        if style == "right":
            pad[b, Tk - n:] = True
        elif style == "left":
            pad[b, :n] = True
        elif style == "all":
            pad[b] = True
        elif style == "scattered":
            pad[b] = torch.from_numpy(p.rng.random(Tk) < 0.4)
    return pad


# (B, H, Tq, Tk, d_k, d_v, block_size, padding, dtype): the visible test's shapes, then others.
PADDED_SHAPES = [
    (4, 2, 7, 10, 9, 5, 4, "visible", torch.float32), (3, 2, 17, 17, 8, 8, 5, "mixed", torch.float32),
    (2, 1, 33, 20, 16, 4, 8, "left", torch.float32), (5, 1, 9, 31, 6, 10, 1, "mixed", torch.float32),
    (2, 2, 12, 12, 8, 8, 64, "right", torch.float32), (1, 1, 19, 23, 7, 3, 6, "scattered", torch.float32),
    (2, 3, 8, 8, 4, 4, 8, "none", torch.float32), (5, 2, 1, 13, 5, 5, 4, "mixed", torch.float32),
    (5, 2, 15, 11, 8, 5, 4, "mixed", torch.float64), (1, 1, 21, 21, 6, 6, 3, "left", torch.float64),
]
CAUSAL_PADDED_SHAPES = [
    (3, 2, 10, 10, 9, 5, 4, "visible", torch.float32), (5, 2, 17, 17, 8, 8, 5, "mixed", torch.float32),
    (2, 1, 33, 33, 16, 4, 8, "left", torch.float32), (3, 1, 9, 9, 6, 10, 1, "left", torch.float32),
    (2, 2, 12, 12, 8, 8, 64, "right", torch.float32), (1, 1, 23, 23, 7, 3, 6, "scattered", torch.float32),
    (2, 1, 16, 16, 4, 4, 4, "none", torch.float32), (2, 2, 1, 1, 5, 5, 4, "none", torch.float32),
    (5, 2, 15, 15, 8, 5, 3, "mixed", torch.float64), (1, 1, 21, 21, 6, 6, 7, "left", torch.float64),
    (2, 2, 14, 14, 16, 4, 4, "none extreme", torch.float64), (3, 1, 19, 19, 8, 3, 5, "mixed extreme", torch.float64),
]


def visible_padding(B, Tk, causal):
    pad = torch.zeros(B, Tk, dtype=torch.bool)
    if causal:
        pad[1, :3], pad[2, 8:] = True, True
    else:
        pad[1, 7:], pad[2, :5], pad[3, :] = True, True, True
    return pad


def padded_cause(got, q, k, v, pad, block, causal, plain):
    """The likely mistake behind a wrong result, from the visible tests' diagnoses. ``plain`` (causal only) is the
    result without causal."""
    tol = TOL[q.dtype]
    has_key = padded_reference(q, k, v, pad, causal).abs().sum(dim=-1) > 0  # (B, H, Tq): queries with a key
    if bool(pad.any()) and same(got, padded_reference(q, k, v, ~pad, causal), tol):
        return diagnosis("flash_padding_inverted", "It matches attention with the padding mask inverted: in "
                         "key_padding_mask, True marks a padding key, one that no query may attend to.")
    if torch.isnan(got).any():
        if torch.isnan(got[~has_key]).any():
            return (diagnosis("flash_nan_no_keys", "It is NaN for queries that have no key at all: their output should be zeros. Divide by the "
                    "running sum only where it is not 0."))
        return (diagnosis("flash_nan_padding_tile", "It contains NaN: after a tile of nothing but padding the running maximum is still -inf, and "
                "exp(m - m_new) = exp(-inf + inf) is NaN. Measure from 0 while the maximum is -inf."))
    if not torch.equal(got[~has_key], torch.zeros_like(got[~has_key])):
        return diagnosis("flash_no_keys_not_zero", "Queries that have no key at all (all padding) should return zeros.")
    if causal and plain is not None and not same(plain, padded_reference(q, k, v, pad), tol):
        return diagnosis("flash_not_causal_too", "Without causal=True it is wrong on these inputs too: pass the test above first.")
    if same(got[has_key], padded_reference(q, k, v, torch.zeros_like(pad), causal)[has_key], tol) and pad.any():
        return diagnosis("flash_padding_ignored", "It matches attention without the padding mask: set the scores of padding keys to -inf in every tile.")
    if causal and float((torch.matmul(q.double(), k.double().mT) / math.sqrt(q.shape[-1])).abs().max()) > 1000:
        return (diagnosis("flash_max_before_mask", "The scores here are in the thousands. If the running maximum of a tile is taken before the causal "
                "mask, a later key's large score sets it, and e^(s - m) of every allowed key underflows to 0: mask "
                "the tile first, then take its maximum."))
    zero_rows = (got == 0).all(dim=-1) & has_key                                # (B, H, Tq)
    if bool(zero_rows.any()) and bool(pad[:, :block].all(dim=-1).any()):
        return (diagnosis("flash_nan_guard_zeros", "Queries that do have keys return zeros, in a batch with a sequence whose first tile is all "
                "padding: after that tile the running maximum is still -inf, exp(-inf + inf) is NaN, and a guard at "
                "the end turned the NaN into zeros. Measure from 0 while the maximum is -inf, as chapter 9's "
                "online_softmax does."))
    if causal and same(got, padded_reference(q, k, v, pad), tol):
        return diagnosis("flash_not_causal", "It matches attention without the causal mask: query i may attend to keys j <= i only.")
    if causal:
        reference = padded_reference(q, k, v, pad, causal)
        wrong = [i for i in range(q.shape[-2]) if not same(got[..., i, :], reference[..., i, :], tol)]
        if wrong and all(i >= block for i in wrong):
            return (diagnosis("flash_tile_positions", "The first block of queries is right and later ones are not: compare the positions in the whole "
                    "sequence, i0 + row and j0 + column, not the positions inside the tile."))
    return (diagnosis("flash_padding_columns", "In the tile of keys j0 to j0 + bk - 1, mask with the columns j0 to j0 + bk - 1 of the padding mask, "
            "broadcast over heads and queries (key_padding_mask[:, None, None, j0:j0 + bk])."))


def fresh_padded(p, causal):
    shapes = []
    for kind in ("mixed", "left"):
        Tq = int(p.rng.integers(1, 40))
        Tk = Tq if causal else int(p.rng.integers(1, 40))
        shapes.append((int(p.rng.integers(1, 6)), int(p.rng.integers(1, 4)), Tq, Tk, int(p.rng.integers(1, 17)),
                       int(p.rng.integers(1, 9)), int(p.rng.integers(1, 12)), kind, torch.float32))
    return shapes


def padded_check(p, shapes, causal):
    calls = []
    for B, H, Tq, Tk, dk, dv, block, kind, dtype in shapes:
        q, k, v = attention_inputs(p, (B, H), Tq, Tk, dk, dv, dtype)
        extreme = kind.endswith(" extreme")
        kind = kind.removesuffix(" extreme")
        if extreme:  # scores in the thousands: a maximum taken over masked keys leaves e^(s - m) = 0 (float64 too)
            q, k = q * 45.0, k * 45.0
        pad = visible_padding(B, Tk, causal) if kind == "visible" else padding(p, kind, B, Tk)
        label = (f"q of shape {(B, H, Tq, dk)}, k {(B, H, Tk, dk)}, v {(B, H, Tk, dv)}, {dtype}, "
                 f"{'the visible test' if kind == 'visible' else kind} padding, block_size={block}"
                 + (", scores in the thousands" if extreme else "") + (", causal=True" if causal else ""))
        kwargs = {"causal": True} if causal else {}
        h = p.call("padded_tiled_attention", q, k, v, pad, block, **kwargs)
        h_plain = p.call("padded_tiled_attention", q, k, v, pad, block) if causal else None
        calls.append((label, q, k, v, pad, block, h, h_plain))

    def judge(r):
        for label, q, k, v, pad, block, h, h_plain in calls:
            what = f"padded_tiled_attention on {label}"
            got = expect_tensor(r, h, what, q.shape[:-1] + v.shape[-1:], q.dtype,
                                "Loop over range(0, Tq, block_size) and join the blocks along dimension -2.")
            tol = TOL[q.dtype]
            reference = padded_reference(q, k, v, pad, causal)
            plain = None
            if h_plain is not None and r.raised(h_plain) is None and _is_array(r.value(h_plain, what)):
                plain = as_tensor(r.value(h_plain, what), what)
            cause = "" if same(got, reference, tol) else padded_cause(got, q, k, v, pad, block, causal, plain)
            close_torch(got, reference, atol=tol, rtol=tol, what="padded_tiled_attention", on=label,
                        cause=f"(Compared with padded_attention_reference{'(..., causal=True)' if causal else ''}, "
                              f"atol=rtol={tol:g}.) {cause}".rstrip())

    return judge


def test_padded_tiled_attention(p):
    return padded_check(p, PADDED_SHAPES + fresh_padded(p, causal=False), causal=False)


def test_padded_tiled_attention_causal(p):
    return padded_check(p, CAUSAL_PADDED_SHAPES + fresh_padded(p, causal=True), causal=True)


def score_sized(ops, Tq, Tk, width):
    """The first (operation, shape) that returned a tensor whose last two dimensions hold Tq * Tk numbers or more,
    as many as one head's whole score matrix, or None (the notebook's score_sized). Tensors whose last dimension
    is at most width (the widest of d_k and d_v) hold features, not scores, and are not counted."""
    for name, _, outputs, _ in ops:
        for shape in outputs:
            if shape and shape[-1] > width and math.prod(shape[-2:]) >= Tq * Tk:
                return name, tuple(shape)
    return None


def test_padded_tiled_attention_memory(p):
    cases = []
    for B, H, Tq, Tk, dk, dv, block, causal, dtype in [
        (2, 2, 48, 48, 8, 4, 8, False, torch.float32), (2, 2, 48, 48, 8, 4, 8, True, torch.float32),  # visible
        (2, 3, 64, 64, 8, 8, 16, False, torch.float32), (2, 3, 64, 64, 8, 8, 16, True, torch.float32),
        (1, 2, 40, 96, 4, 6, 8, False, torch.float32), (1, 1, 50, 50, 4, 4, 7, True, torch.float64),
        (3, 1, 33, 33, 16, 2, 5, True, torch.float32), (1, 1, 2048, 2048, 16, 16, 256, False, torch.float32),
        (1, 1, 2048, 2048, 16, 16, 256, True, torch.float32),
    ]:
        q, k, v = attention_inputs(p, (B, H), Tq, Tk, dk, dv, dtype)
        pad = torch.zeros(B, Tk, dtype=torch.bool)
        pad[-1, Tk - int(p.rng.integers(1, Tk // 2)):] = True  # the last sequence: right padding
        u = torch.linspace(-1.0, 2.0, dv, dtype=dtype)
        same_values = u.expand(v.shape).clone()  # every real key's value is u: so is every weighted average of them
        same_values[pad[:, None, :, None].expand(v.shape)] = 50.0  # the padding keys' values: weight on them shows
        label = (f"q of shape {(B, H, Tq, dk)}, k {(B, H, Tk, dk)}, v {(B, H, Tk, dv)}, {dtype}, right padding, "
                 f"block_size={block}, causal={causal}")
        cases.append((label, q, k, u, pad, block, causal, TOL[dtype],
                      p.call("recorded_ops", "padded_tiled_attention", q, k, same_values, pad, block, causal)))
    long_case = None
    if not p.in_kernel:  # seconds of work; outside the kernel the student's code cannot reach the memory limit
        T = long_sequence_length(p.limits.memory_bytes)
        q_long, k_long, v_long = attention_inputs(p, (1, 1), T, T, 2, 2, torch.float64)
        pad_long = torch.zeros(1, T, dtype=torch.bool)
        pad_long[0, T - 300:] = True
        long_label = (f"a sequence of {T} tokens, float64, block_size={LONG_BLOCK}, causal=True, whose (T, T) scores "
                      f"need {T * T * 8 / 2**30:.2f} GiB, more than the memory of the process")
        long_case = (long_label, q_long.shape[:-1] + v_long.shape[-1:],
                     p.call("padded_tiled_attention", q_long, k_long, v_long, pad_long, LONG_BLOCK, causal=True))

    def judge(r):
        for label, q, k, u, pad, block, causal, tol, h in cases:
            what = f"padded_tiled_attention(q, k, v, pad, block_size={block}, causal={causal}) with {label}"
            got, ops = recorded(r, h, what)
            built_in = [name for name, *_ in ops if any(word in str(name) for word in BUILT_IN_ATTENTION)]
            expect(not built_in, f"{what} calls {built_in[0] if built_in else ''}: compute the tiles yourself; "
                                 "PyTorch's attention is what the tests compare you with.", cause="flash_calls_built_in")
            Tq, Tk = q.shape[-2], k.shape[-2]
            largest = score_sized(ops, Tq, Tk, max(q.shape[-1], u.shape[-1]))
            maker, made = largest or ("", ())
            expect(largest is None,
                   f"{what} made a tensor of shape {made} (with {maker}), which holds {Tq} × {Tk} numbers or more "
                   "per head: as many as the whole score matrix. Compute the scores, and mask them, one tile (at "
                   "most block_size × block_size) at a time.", cause="flash_score_sized_tensor")
            expect(_is_array(got), f"{what} should return a torch.Tensor, but it does not.")
            got = as_tensor(got, what)
            shape = q.shape[:-1] + u.shape
            expect(tuple(got.shape) == tuple(shape),
                   f"{what} should have shape {tuple(shape)}, but it has shape {tuple(got.shape)}.")
            if not causal:  # the values of causal attention are the causal cell's: one slip, one loss
                close_torch(got, u.expand(got.shape), atol=tol, rtol=1e-5, what=f"padded_tiled_attention with {label}",
                            on="values that are all the same vector u on the real keys (the padding keys hold 50s)",
                            cause="When every real key's value is the same vector u, every output should be u, "
                                  "because the weights of a query sum to 1 and padding keys get none: mask the padding "
                                  "in every tile, divide the running output by the running sum at the end, and "
                                  "rescale both by exp(m - m_new) whenever the maximum grows.")
        if long_case is not None:
            long_label, shape, h_long = long_case
            error = r.raised(h_long)
            expect(error is None or not error.is_a("MemoryError"),
                   f"padded_tiled_attention on {long_label} ran out of memory (MemoryError): it made a tensor as "
                   "large as the whole score matrix. Compute the scores one tile (at most block_size × block_size) "
                   "at a time, skip the tiles after the diagonal, and mask the tile on the diagonal alone.")
            expect_tensor(r, h_long, f"padded_tiled_attention on {long_label}", shape, torch.float64)

    return judge


# --- RollingKVCache ---------------------------------------------------------------------------------------


def cache_cause(got, want, every, window, t):
    """(code, text) of the likely mistake behind wrong positions returned by the cache: ``every`` is all that was
    appended, ``want`` its last positions, the last chunk ``t`` positions long."""
    T, held = every.shape[-2], want.shape[-2]
    order = torch.argsort(torch.arange(T - held, T) % window)
    if torch.equal(got, want[..., order, :]):
        return "cache_slot_order", " They are the right positions in the order of their slots: return them oldest first."
    if T > window and torch.equal(got, every[..., :window, :]):
        return ("cache_stops_when_full", " They are the first positions: a full cache overwrites its oldest, slot "
                                         "p % window.")
    if t > window and torch.equal(got, every[..., T - t:T - t + window, :]):
        return ("cache_long_chunk_keeps_first", f" They are the first {window} positions of the last chunk, of {t} "
                                                "positions: a chunk longer than the window leaves only its latest.")
    return None, ""


def test_rolling_kv_cache(p):
    cases = []
    for lead, dk, dv, window, lengths, dtype in [
        ((2, 3), 5, 2, 4, [3, 1, 1, 2, 6, 1], torch.float32),  # the visible test's
        ((2, 3), 4, 4, 1, [1, 1, 3, 1], torch.float32), ((1, 2), 8, 6, 5, [5, 1, 4, 5, 1], torch.float32),
        ((2,), 4, 3, 3, [2, 2, 2, 2, 2], torch.float32), ((1, 4), 6, 2, 7, [1] * 9, torch.float64),
        ((3,), 4, 5, 6, [13, 1, 2], torch.float32), ((2, 2), 3, 3, 8, [3, 2], torch.float32),
        ((2, 1), 4, 4, int(p.rng.integers(1, 7)), [int(n) for n in p.rng.integers(1, 9, size=4)], torch.float32),
    ]:
        chunks = [(p.randn(*lead, t, dk, dtype=dtype), p.randn(*lead, t, dv, dtype=dtype)) for t in lengths]
        label = f"RollingKVCache({window}) with chunks of {lengths} positions of shape {lead + ('t', dk)}, {dtype}"
        cases.append((label, window, chunks, p.call("rolling_history", Nested("RollingKVCache", window), chunks)))

    def judge(r):
        for n_case, (label, window, chunks, h) in enumerate(cases):
            error = r.raised(h)
            expect(error is None, f"{label}: the cache raised {error.type if error else ''}: "
                                  f"{error.message[:200] if error else ''}")
            history = returned(r, h, label)
            expect(isinstance(history, list) and len(history) >= 1,
                   f"{label} left no history: run the helper cell unchanged.")
            expect(history[0] == 0, f"A new RollingKVCache({window}) should have length 0; it has {history[0]}.")
            for n, state in enumerate(history[1:], 1):
                where = f"after {n} append(s) of {label}"
                if isinstance(state, tuple) and len(state) == 2 and all(isinstance(x, str) for x in state):
                    kind, message = state
                    hint = (" torch.cat and writes into the buffer need the positions on dimension -2, and every other "
                            "dimension equal: is a dimension other than -2 joined or indexed?"
                            if kind == "RuntimeError" else "")
                    before = sum(c[0].shape[-2] for c in chunks[:n - 1])         # positions appended before it
                    filled = before < window <= before + chunks[n - 1][0].shape[-2]
                    expect(False, f"cache.append raised {kind} at append {n} of {label} (a chunk of "
                                  f"{chunks[n - 1][0].shape[-2]} positions): {message}.{hint}",
                           cause="cache_fails_when_full" if kind == "RuntimeError" and filled else None)
                expect(isinstance(state, tuple) and len(state) == 5, f"The cache {where} is in a malformed state.")
                keys, values, length, k_buf, v_buf = state
                all_k = torch.cat([c[0] for c in chunks[:n]], dim=-2)
                all_v = torch.cat([c[1] for c in chunks[:n]], dim=-2)
                T = all_k.shape[-2]
                held = min(T, window)
                counts_all = T > window and length == T    # len(cache) counts every position appended
                for name, got, every in [("keys", keys, all_k), ("values", values, all_v)]:
                    expect(_is_array(got), f"The {name} append returned {where} should be a torch.Tensor; they are "
                                           "not. append returns the pair (keys, values).")
                    got = as_tensor(got, f"the {name} {where}")
                    want = every[..., T - held:, :]
                    expect(tuple(got.shape) == tuple(want.shape),
                           f"The {name} append returned {where} should have shape {tuple(want.shape)}, the last "
                           f"min({T}, {window}) positions; they have {tuple(got.shape)}.",
                           cause="cache_len_counts_all" if counts_all and got.shape[-2] == T else None)
                    if not torch.equal(got, want):
                        code, cause = cache_cause(got, want, every, window, chunks[n - 1][0].shape[-2])
                        expect(False, f"The {name} append returned {where} should be the last {held} positions "
                                      f"appended, oldest first; they are not.{cause}", cause=code)
                for name, buf, every, d in [("k_buf", k_buf, all_k, all_k.shape[-1]),
                                            ("v_buf", v_buf, all_v, all_v.shape[-1])]:
                    expect(_is_array(buf), f"cache.{name} {where} should be a torch.Tensor, the buffer of window "
                                           "slots; it is not.")
                    buf = as_tensor(buf, f"cache.{name} {where}")
                    shape = every.shape[:-2] + (window, d)
                    expect(tuple(buf.shape) == tuple(shape),
                           f"cache.{name} {where} should have shape {tuple(shape)}: window slots along dimension "
                           f"-2; it has {tuple(buf.shape)}.")
                    slots = torch.arange(T - held, T) % window
                    expect(buf.dtype == every.dtype and torch.equal(buf[..., slots, :], every[..., T - held:, :]),
                           f"cache.{name} {where} should hold position p in slot p % window; it does not.")
                expect(length == held, f"len(cache) {where} should be {held}, the positions it holds; it is {length}."
                       + (" That counts every position appended: a full cache holds window positions."
                          if counts_all else ""), cause="cache_len_counts_all" if counts_all else None)
            expect(len(history) == len(chunks) + 1, f"{label}: not every append was recorded.")

    return judge


CHECKS = {
    "test_merge_partials": test_merge_partials,
    "test_padded_tiled_attention": test_padded_tiled_attention,
    "test_padded_tiled_attention_causal": test_padded_tiled_attention_causal,
    "test_padded_tiled_attention_memory": test_padded_tiled_attention_memory,
    "test_rolling_kv_cache": test_rolling_kv_cache,
}
