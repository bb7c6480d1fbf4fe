"""The checks of ex05_positions (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/assignments/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verification/verify.py) runs them outside it on inputs drawn
afresh for every grading run. A failed check's message is what the student
reads in the feedback: which function, on what input, how far off and the
likely cause, never the expected numbers.

``rope_decode_step`` is judged twice, on batches of left-padded caches whose
sequences hold different numbers of tokens (``cache_lengths``). Its caches
(``test_rope_decode_cache``) are compared with RoPE computed here in float64
at the positions that follow each sequence's own cache, the cached and padding
rows exactly, on empty, short and long caches (tens of thousands of tokens,
where angles computed in float32 are off), and lengths out of range must raise
a ValueError. Its output (``test_rope_decode_attention``) is compared with
causal attention computed here in float64 over the student's own rotated keys
and queries (the queries' rotation is read from a second call whose keys are
the queries), padding hidden, so that a mistake in the rotation costs the first
cell only. ``t5_bucket_starts`` is
compared exactly with the first distance of every bucket of T5's rule (Mesh
TensorFlow's ``_relative_position_bucket``, float32 logarithm, truncation,
given in a locked cell), found here by bisection on the rule, -1 for buckets
no distance reaches, for both directions, fixed corners (max_distance small
beside the number of buckets, float32 against float64, up to 10**12) and
configurations drawn afresh for each run. ``is_permutation_equivariant`` is given layers built from the classes of
the notebook's locked ``layers`` cell (``Tokenwise``, ``AddPositions``, ...),
with weights and position tables drawn here; whether each layer is equivariant
is known here from how it was built, and the student's answer must agree; a
recorded layer shows the reordered inputs it was called on (``num_trials``,
and the orders of a generator seeded with 0).
"""

import math

import torch

from tools.verification.probes import Fail, Nested, Recorded, as_tensor, close_torch, diagnosis, expect


# --- references, and the usual mistakes as variants of them -------------------------------------------------------


def reference_turn(x, starts, base=10000.0, angles_in=torch.float64, sign=1.0):
    """x, (B, ..., T, d), rotated by RoPE (interleaved pairs) in float64, sequence b at positions starts[b],
    starts[b] + 1, ...; the variants: angles computed in float32 (``angles_in``) or clockwise (``sign`` -1)."""
    B, T, d = x.shape[0], x.shape[-2], x.shape[-1]
    positions = (torch.as_tensor(starts).long()[:, None] + torch.arange(T)).to(angles_in)  # (B, T)
    freqs = base ** (-torch.arange(0, d, 2).to(angles_in) / d)
    angles = sign * (positions[..., None] * freqs).double()  # (B, T, d/2)
    angles = angles.reshape(B, *(1,) * (x.dim() - 3), T, d // 2)
    c, s = angles.cos(), angles.sin()
    a, b = x.double()[..., 0::2], x.double()[..., 1::2]
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)


# The likely mistakes these checks name, by code: what the mistake is, and the chapter section that teaches it
# (the instructor's report, instructor/report.md). The codes every check may report are in probes.GENERAL_CAUSES.
ROPE = "ch07_word_order: Relative positions: rotary embeddings (RoPE)"
CAUSES = {
    "rope_same_start": ("new tokens rotated at the same positions in every sequence, ignoring cache_lengths", ROPE),
    "rope_restarts_at_0": ("new tokens rotated from position 0 instead of after the cached ones", ROPE),
    "rope_float32_angles": ("RoPE angles computed in float32", ROPE),
    "rope_clockwise": ("rotation in the wrong direction", ROPE),
    "rope_base_ignored": ("the base argument ignored (10000 used)", ROPE),
    "rope_not_rotated": ("keys not rotated at all", ROPE),
    "cache_reads_padding": ("attention reads the cache's padding rows",
                            "ch09_efficient_attention: Generating text: the KV cache"),
    "cache_not_causal": ("no causal mask among the new tokens", "ch04_softmax_masking: Causal masks"),
    "cache_mask_top_left": ("a causal mask aligned to the top-left corner instead of the cache's end",
                            "ch09_efficient_attention: Generating text: the KV cache"),
    "unscaled": ("scores not divided by sqrt(d)", "ch03_scaling: Scaled attention, checked against PyTorch"),
    "scaled_by_sqrt_dv": ("scores divided by sqrt(d_v) instead of sqrt(d)",
                          "ch03_scaling: A classic bug: dividing by the model width"),
    "bucket_upper_half_start": ("the first bucket of the upper half given a start", "ch07_word_order: Score against distance, four ways"),
    "bucket_skipped": ("a bucket no position lands in given a start", "ch07_word_order: Score against distance, four ways"),
    "bucket_last_at_max": ("the last bucket started at max_distance", "ch07_word_order: Score against distance, four ways"),
    "bucket_not_halved": ("num_buckets not halved for bidirectional buckets", "ch07_word_order: Score against distance, four ways"),
    "bucket_solved_in_float64": ("bucket starts solved in float64 instead of T5's float32 rule",
                                 "ch07_word_order: Score against distance, four ways"),
    "bucket_rule_in_float64": ("bucket starts found on a float64 copy of the formula instead of T5's float32 rule",
                               "ch07_word_order: Score against distance, four ways"),
    "bucket_every_distance": ("a tensor of every distance up to max_distance, which does not fit in memory when it is "
                              "large", "ch07_word_order: Score against distance, four ways"),
    "cache_new_before_old": ("the new keys put before the cached ones instead of after them",
                             "ch09_efficient_attention: Generating text: the KV cache"),
    "cache_rotated_again": ("the cached keys, already rotated, rotated again", ROPE),
    "equivariance_always_true": ("the equivariance check answers True for every layer",
                                 "ch07_word_order: Attention does not see order"),
    "equivariance_output_unpermuted": ("layer(x[:, perm]) compared with layer(x), its output not reordered",
                                       "ch07_word_order: Attention does not see order"),
    "equivariance_inverse_order": ("the output reordered by the inverse permutation",
                                   "ch07_word_order: Attention does not see order"),
    "equivariance_batch_axis": ("the sequences of the batch reordered instead of the tokens",
                                "ch07_word_order: Attention does not see order"),
    "equivariance_reversal_only": ("the reversal tried alone, without random orders",
                                   "ch07_word_order: Attention does not see order"),
    "equivariance_exact": ("outputs compared exactly, where rounding makes them differ slightly",
                           "ch07_word_order: Attention does not see order"),
    "equivariance_tuple_item": ("a layer that returns a tuple judged by another item than its first, the output",
                                "ch07_word_order: Attention does not see order"),
    "equivariance_atol_ignored": ("the atol argument ignored (torch.allclose's default tolerances used)",
                                  "ch07_word_order: Attention does not see order"),
    "equivariance_num_trials_ignored": ("the num_trials argument ignored", "ch07_word_order: Attention does not see order"),
    "equivariance_global_rng": ("the random orders drawn from torch's global generator",
                                "ch07_word_order: Attention does not see order"),
    "equivariance_seeds_global_rng": ("torch's global generator seeded (torch.manual_seed) to draw the orders",
                                      "ch07_word_order: Attention does not see order"),
}


def turn_cause(got, k, lengths, L, base):
    """The usual mistake behind wrong new rows of the key cache (float64), in words, or ""."""
    every = torch.full_like(lengths, L)
    mistakes = [("rope_same_start", dict(starts=every), f"They are rotated at positions {L}, {L + 1}, ... in every sequence, as if each "
                                     f"had a token in every one of the {L} rows of its cache: the new tokens of "
                                     "sequence b stand after its own cache_lengths[b] tokens."),
                ("rope_restarts_at_0", dict(starts=torch.zeros_like(lengths)), "They are rotated at positions 0, 1, ...: the new tokens of "
                                                         "sequence b stand after its cache_lengths[b] cached ones."),
                ("rope_float32_angles", dict(angles_in=torch.float32), "They match RoPE with its angles computed in float32, which loses "
                                                "their last digits at large positions: compute positions, frequencies "
                                                "and angles in float64."),
                ("rope_clockwise", dict(sign=-1.0), "They turn clockwise: out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i] sin + "
                                  "x[2i+1] cos.")]
    if base != 10000.0:
        mistakes.append(("rope_base_ignored", dict(base=10000.0), "They are rotated with base 10000: use the base argument."))
    for code, variant, cause in mistakes:
        args = {"starts": lengths, "base": base, **variant}
        if torch.equal(args["starts"], lengths) and "starts" in variant:
            continue
        if torch.allclose(got, reference_turn(k, **args), atol=1e-5, rtol=1e-5):
            return diagnosis(code, cause)
    if torch.allclose(got, k.double(), atol=1e-6):
        return diagnosis("rope_not_rotated", "They are not rotated at all.")
    return diagnosis("other", "")


def cached_rows_cause(keys, k_cache, T_new):
    """The code of the usual mistake behind a key cache whose first L rows are not the cached ones: the cached rows
    found after the new ones, or turned (each pair of entries keeps its length, as a rotation does)."""
    L = k_cache.shape[-2]
    if tuple(keys.shape[:-2]) != tuple(k_cache.shape[:-2]) or keys.shape[-2] != L + T_new or L == 0:
        return None
    if torch.equal(keys[..., T_new:, :], k_cache):
        return "cache_new_before_old"

    def pair_lengths(x):
        x = x.double()
        return x[..., 0::2] ** 2 + x[..., 1::2] ** 2

    if torch.allclose(pair_lengths(keys[..., :L, :]), pair_lengths(k_cache), atol=1e-4, rtol=1e-4):
        return "cache_rotated_again"
    return None


def causal_attention(q, keys, values, lengths, L, scale, mask="positions"):
    """softmax(q keys^T / scale) values in float64, the new query t of sequence b (in row L + t) seeing the rows
    from L - lengths[b] to L + t; the variants: ``mask`` "none", "no padding" (padding rows seen too), or
    "top-left" (a tril of T_new rows and L + T_new columns, padding hidden)."""
    B, T_new, n = q.shape[0], q.shape[-2], keys.shape[-2]
    scores = q.double() @ keys.double().transpose(-2, -1) / scale
    row = torch.arange(n)
    real = row >= (L - torch.as_tensor(lengths).long())[:, None, None]  # (B, 1, n)
    allowed = {"positions": real & (row <= L + torch.arange(T_new)[:, None]),
               "no padding": (row <= L + torch.arange(T_new)[:, None]).expand(B, T_new, n),
               "top-left": real & torch.ones(T_new, n, dtype=torch.bool).tril(),
               "none": real.expand(B, T_new, n)}[mask]
    scores = scores.masked_fill(~allowed.reshape(B, *(1,) * (q.dim() - 3), T_new, n), float("-inf"))
    return torch.softmax(scores, dim=-1) @ values.double()


def attention_cause(out, q_turned, keys, values, lengths, L):
    d, d_v = q_turned.shape[-1], values.shape[-1]
    for code, kwargs, cause in [("cache_reads_padding", dict(mask="no padding"), "It matches attention that reads the padding rows too: the real "
                                                    "keys of sequence b start at row L - cache_lengths[b]."),
                          ("cache_not_causal", dict(mask="none"), "It matches attention without the causal mask: a new token would see "
                                              "the new tokens after it."),
                          ("cache_mask_top_left", dict(mask="top-left"), "It matches a causal mask whose diagonal starts in the top-left "
                                                  "corner, as if the new tokens sat in rows 0, 1, ...: new token t "
                                                  "sits in row L + t."),
                          ("unscaled", dict(scale=1.0), "It matches scores without the 1/sqrt(d) scale."),
                          ("scaled_by_sqrt_dv", dict(scale=math.sqrt(d_v)), "It matches scores scaled by sqrt(d_v): scale by sqrt(d), d "
                                                       "the width of q and k.")]:
        if kwargs.get("scale") == math.sqrt(d_v) and d_v == d:
            continue
        args = {"scale": math.sqrt(d), "mask": "positions", **kwargs}
        if torch.allclose(out, causal_attention(q_turned, keys, values, lengths, L, **args), atol=1e-5, rtol=1e-5):
            return diagnosis(code, cause)
    return diagnosis("other", "")


def reference_bucket(rel, bidirectional, num_buckets, max_distance):
    """T5's bucket of every relative position (Mesh TensorFlow's _relative_position_bucket: float32 logarithm,
    truncation, capped at the last bucket of a half), as the notebook's locked cell gives it."""
    rel = torch.as_tensor(rel).long()
    offset = torch.zeros_like(rel)
    n = num_buckets
    if bidirectional:
        n = num_buckets // 2
        offset = (rel > 0).long() * n
        a = rel.abs()
    else:
        a = (-rel).clamp(min=0)
    e = n // 2
    fraction = torch.log(a.float() / e) / math.log(max_distance / e) * (n - e)
    return offset + torch.where(a < e, a, (e + fraction.long()).clamp(max=n - 1))


def bucket_in_float64(a, num_buckets, max_distance, bidirectional):
    """The bucket of a key a positions back by T5's formula computed in float64 (the slip), not T5's float32 rule."""
    n = num_buckets // 2 if bidirectional else num_buckets
    e = n // 2
    fraction = torch.log(a.double() / e) / math.log(max_distance / e)
    return torch.where(a < e, a, (e + (fraction * (n - e)).long()).clamp(max=n - 1))


def reference_starts(bidirectional, num_buckets, max_distance, halve=True, first_of_upper=-1, skipped=-1,
                     last_at_max=False, solved_in_float64=False, rule_in_float64=False):
    """The first distance of every bucket of T5's rule, -1 for a bucket no relative position lands in (bisection on
    the rule, which never decreases with the distance). The variants: bidirectional buckets not halved, the upper
    half's first bucket given distance ``first_of_upper`` (0: relative position 0 read as after the query), a
    skipped bucket given the first distance beyond it (``skipped`` None), the last bucket of a half starting at
    max_distance, the formula solved for the distance in float64 (rounded up) in place of the rule, and the
    bisection asking the formula in float64 (``rule_in_float64``) in place of the rule."""
    n = num_buckets // 2 if bidirectional and halve else num_buckets
    e = n // 2
    starts = torch.full((num_buckets,), -1, dtype=torch.long)
    starts[:e] = torch.arange(e)
    target = torch.arange(e, n)
    if solved_in_float64:
        found = torch.tensor([math.ceil(e * math.exp((b - e) / (n - e) * math.log(max_distance / e)))
                              for b in range(e, n)], dtype=torch.long)
        starts[e:n] = found.clamp(min=e)
    else:
        def rule(a):
            if rule_in_float64:
                return bucket_in_float64(a, num_buckets, max_distance, bidirectional)
            return reference_bucket(-a, bidirectional, num_buckets, max_distance)

        lo, hi = torch.full_like(target, e), torch.full_like(target, max_distance)
        while bool((lo < hi).any()):
            mid = (lo + hi) // 2
            reached = rule(mid) >= target
            hi, lo = torch.where(reached, mid, hi), torch.where(reached, lo, mid + 1)
        landed = rule(lo) == target
        starts[e:n] = lo if skipped is None else torch.where(landed, lo, skipped)
    if last_at_max:
        starts[n - 1] = max_distance
    if bidirectional and 2 * n <= num_buckets:
        starts[n:2 * n] = starts[:n]
        starts[n] = first_of_upper
    return starts


START_MISTAKES = [
    ("bucket_upper_half_start", dict(first_of_upper=0), "Bucket num_buckets // 2, the first of the upper half, should be -1: relative position 0 "
                             "is not after the query, and t5_relative_bucket puts it in the lower half."),
    ("bucket_skipped", dict(skipped=None), "Where consecutive distances jump over a bucket, yours gives the skipped bucket the first "
                         "distance of a later one: a bucket that no relative position lands in is -1."),
    ("bucket_last_at_max", dict(last_at_max=True), "The last bucket of a half looks started at max_distance: the cap at n - 1 makes it "
                             "start earlier, where the truncated fraction first reaches n - e - 1."),
    ("bucket_not_halved", dict(halve=False), "With bidirectional=True each direction has num_buckets // 2 buckets, not num_buckets."),
    ("bucket_solved_in_float64", dict(solved_in_float64=True), "The starts look solved from the formula in float64: T5's rule computes the "
                                   "fraction in float32, which truncates to another bucket at some distances, and "
                                   "skips buckets when max_distance is small. Let t5_relative_bucket decide."),
    ("bucket_rule_in_float64", dict(rule_in_float64=True), "The starts look found with the formula computed in "
                               "float64: T5's rule computes the fraction in float32, which truncates to another "
                               "bucket at some distances. Let t5_relative_bucket decide."),
]


def starts_cause(got, config, others=()):
    """The usual mistake whose starts ``got`` are, on ``config``. Where several give the same starts there (solving
    in float64 fills a skipped bucket as forgetting the -1 does), the one that also gives ``others``, the starts
    returned for other configurations [(starts, config)], is named."""
    matching = [m for m in START_MISTAKES if torch.equal(got, reference_starts(*config, **m[1]))]
    if len(matching) > 1:
        matching = [m for m in matching if all(torch.equal(other, reference_starts(*where, **m[1]))
                                                for other, where in others)] or matching
    if matching:
        code, _, cause = matching[0]
        return diagnosis(code, cause)
    return diagnosis("other", "")


# --- helpers for the judges ----------------------------------------------------------------------------------------


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


# --- the checks ----------------------------------------------------------------------------------------------------


def decode_inputs(p, B, middle, T_new, L, d, d_v, dtype, lengths=None):
    """q, k, v, k_cache, v_cache and cache_lengths: the first sequence's cache full, the second's (if any) empty, the
    others' drawn (or ``lengths``)."""
    lead = (B, *middle)
    q, k = p.randn(*lead, T_new, d, dtype=dtype), p.randn(*lead, T_new, d, dtype=dtype)
    v = p.randn(*lead, T_new, d_v, dtype=dtype)
    if lengths is None:
        lengths = [L, 0][:B] + [int(p.rng.integers(0, L + 1)) for _ in range(B - 2)]
    return (q, k, v, p.randn(*lead, L, d, dtype=dtype), p.randn(*lead, L, d_v, dtype=dtype),
            torch.tensor(lengths, dtype=torch.long))


def described(q, L, lengths, dtype, base):
    return (f"q of shape {tuple(q.shape)}, caches of {L} rows holding {lengths.tolist()[:6]} tokens, {dtype}"
            + (f", base={base:g}" if base != 10000.0 else ""))


def test_rope_decode_cache(p):
    f32, f64 = torch.float32, torch.float64
    sizes = [(1, (), 2, 5, 4, 3, f32, 10000.0, None), (2, (), 4, 0, 6, 2, f64, 10000.0, None),
             (2, (3,), 1, 7, 8, 5, f32, 500.0, None), (3, (2,), 3, 11, 4, 4, f64, 10000.0, None),
             (4, (), 2, int(p.rng.integers(1, 30)), 10, 3, f32, 10000.0, None),
             (2, (1,), 2, 50000, 16, 2, f32, 10000.0, [50000, int(p.rng.integers(30000, 50000))]),
             (1, (), 1, 2000, 8, 1, f64, 10000.0, None), (3, (2,), 3, 6, 4, 2, f32, 10000.0, [2, 6, 4])]
    cases = []
    for B, middle, T_new, L, d, d_v, dtype, base, lengths in sizes:
        q, k, v, kc, vc, ell = decode_inputs(p, B, middle, T_new, L, d, d_v, dtype, lengths)
        cases.append((described(q, L, ell, dtype, base), (q, k, v, kc, vc, ell), base, 1e-4 if dtype == f32 else 1e-10,
                      p.call("rope_decode_step", q, k, v, kc, vc, ell, base=base, after=(0, 1, 2, 3, 4, 5))))
    q, k, v, kc, vc, _ = decode_inputs(p, 3, (2,), 2, 5, 4, 3, f32)
    refused = [(f"cache_lengths {bad.tolist()} for B = 3 sequences and caches of 5 rows",
                p.call("rope_decode_step", q, k, v, kc, vc, bad))
               for bad in (torch.tensor([5, 6, 0]), torch.tensor([-1, 2, 3]), torch.tensor([5, 5]))]

    def judge(r):
        for label, (q, k, v, kc, vc, ell), base, tol, h in cases:
            what = f"rope_decode_step on {label}"
            error = r.raised(h)
            expect(error is None, f"{what} raised {error}.")
            result = r.value(h, what)
            expect(isinstance(result, (tuple, list)) and len(result) == 3,
                   f"{what} should return a triple (out, k_cache, v_cache).")
            keys, values = as_tensor(result[1], what), as_tensor(result[2], what)
            L = kc.shape[-2]
            for name, arg, index in [("q", q, 0), ("k", k, 1), ("v", v, 2), ("k_cache", kc, 3), ("v_cache", vc, 4),
                                     ("cache_lengths", ell, 5)]:
                expect(torch.equal(as_input_at(r, h, index, what), arg), f"{what} changed its argument {name}.")
            want = tuple(kc.shape[:-2]) + (L + q.shape[-2], kc.shape[-1])
            expect(tuple(keys.shape) == want, f"The key cache returned by {what} should have shape {want}; it has "
                                              f"shape {tuple(keys.shape)}.")
            expect(keys.dtype == q.dtype and values.dtype == q.dtype,
                   f"The caches returned by {what} are {keys.dtype} and {values.dtype}; both should be {q.dtype}.")
            expect(torch.equal(keys[..., :L, :], kc),
                   f"The first {L} rows of the key cache returned by {what} should be the cached rows (keys and "
                   "padding) exactly as they came in; they are not. Are they rotated again, or put after the new ones?",
                   cause=cached_rows_cause(keys, kc, q.shape[-2]))
            expect(tuple(values.shape) == tuple(vc.shape[:-2]) + (L + v.shape[-2], v.shape[-1])
                   and torch.equal(values, torch.cat([vc, v], dim=-2)),
                   f"The value cache returned by {what} should be the cached rows followed by the new values, "
                   "unrotated; it is not.")
            got = keys[..., L:, :].double()
            close_explained(got, reference_turn(k, ell, base), atol=tol, rtol=tol,
                            what="The key cache returned by rope_decode_step (its new rows)", on=label,
                            explain=lambda: turn_cause(got, k, ell, L, base),
                            otherwise="They are compared with RoPE computed in float64, sequence b at positions "
                                      f"cache_lengths[b], cache_lengths[b] + 1, ..., atol=rtol={tol:g}.")
        for label, h in refused:
            error = r.raised(h)
            expect(error is not None and error.is_a("ValueError"),
                   f"rope_decode_step with {label} should raise a ValueError (each of the B lengths is from 0 to L); "
                   + (f"it raised {error}." if error is not None else "it returned."),
                   cause="no_validation" if error is None else "wrong_exception")

    return judge


def test_rope_decode_attention(p):
    f32, f64 = torch.float32, torch.float64
    sizes = [(1, (), 3, 4, 6, 5, f32, 10000.0, None), (2, (), 5, 0, 4, 3, f64, 10000.0, None),
             (2, (2,), 1, 9, 8, 8, f32, 10000.0, None), (3, (3,), 4, 6, 6, 2, f64, 100.0, [3, 6, 1]),
             (3, (2,), 3, 2, 4, 4, f32, 10000.0, None), (2, (1,), 2, 3000, 8, 3, f32, 10000.0, [3000, 17]),
             (4, (), 7, int(p.rng.integers(1, 40)), 2, 3, f64, 10000.0, None)]
    cases = []
    for B, middle, T_new, L, d, d_v, dtype, base, lengths in sizes:
        q, k, v, kc, vc, ell = decode_inputs(p, B, middle, T_new, L, d, d_v, dtype, lengths)
        u = p.randn(d_v, dtype=dtype)
        cases.append((described(q, L, ell, dtype, base), q, v, ell, L, 1e-4 if dtype == f32 else 1e-10,
                      p.call("rope_decode_step", q, k, v, kc, vc, ell, base=base),
                      p.call("rope_decode_step", q, q, v, kc, vc, ell, base=base),
                      (u, p.call("rope_decode_step", q, k, u.expand(v.shape).clone(), kc,
                                 u.expand(vc.shape).clone(), ell, base=base))))

    def triple(r, h, what):
        error = r.raised(h)
        expect(error is None, f"{what} raised {error}.")
        result = r.value(h, what)
        expect(isinstance(result, (tuple, list)) and len(result) == 3,
               f"{what} should return a triple (out, k_cache, v_cache).")
        return [as_tensor(item, what) for item in result]

    def judge(r):
        for label, q, v, ell, L, tol, h, h_q, (u, h_u) in cases:
            what = f"rope_decode_step on {label}"
            out, keys, values = triple(r, h, what)
            expect(tuple(out.shape) == tuple(v.shape), f"The output of {what} should have shape {tuple(v.shape)}, "
                                                       f"the shape of v; it has shape {tuple(out.shape)}.")
            expect(out.dtype == q.dtype, f"{what} returns an output of {out.dtype}; it should be {q.dtype}.")
            _, as_keys, _ = triple(r, h_q, f"{what}, with the queries passed as keys")
            expect(tuple(as_keys.shape) == tuple(keys.shape),
                   f"{what}: the key cache has shape {tuple(keys.shape)} with k and {tuple(as_keys.shape)} with the "
                   "queries passed as keys.")
            q_turned = as_keys[..., L:, :].double()  # the student's rotation of q, as it rotates keys
            ref = causal_attention(q_turned, keys, values, ell, L, math.sqrt(q.shape[-1]))
            close_explained(out.double(), ref, atol=tol, rtol=tol, what="The output of rope_decode_step", on=label,
                            explain=lambda: attention_cause(out.double(), q_turned, keys, values, ell, L),
                            otherwise="It is compared with softmax(RoPE(q) K^T / sqrt(d)) V over your own caches, the "
                                      "new token t of sequence b seeing rows L - cache_lengths[b] to L + t, computed in "
                                      f"float64 (atol=rtol={tol:g}).")
            out_u, _, _ = triple(r, h_u, f"{what}, every value the same vector u")
            close_torch(out_u.double(), u.double().expand(v.shape), atol=tol, rtol=tol,
                        what="The output of rope_decode_step", on=f"{label}, every value the same vector u",
                        cause="Every output should be u: a query's weights sum to 1 and the values are not rotated. "
                              f"(atol=rtol={tol:g})")

    return judge


BUCKET_CONFIGS = [(True, 16, 64), (True, 10, 50), (False, 12, 100), (False, 8, 20), (True, 64, 256),
                  (True, 24, 90), (False, 20, 40), (True, 128, 5000), (False, 6, 1000)]
# Always tried as well: the defaults both ways; max_distance small beside the number of buckets (64 buckets and 20,
# and just above e); a fraction whose float32 and float64 values truncate to different buckets (distance 40 of 40
# buckets and 320, 160 of 20 and 320); the fewest buckets; and max_distance up to 10**12.
FIXED_BUCKET_CONFIGS = [(True, 32, 128), (False, 32, 128), (True, 64, 20), (False, 40, 24), (True, 128, 33),
                        (True, 40, 320), (False, 20, 320), (True, 4, 2), (False, 4, 3), (True, 32, 10**12),
                        (False, 64, 3 * 10**11), (True, 128, 10**12)]


def test_t5_bucket_starts(p):
    picked = sorted(p.rng.choice(range(len(BUCKET_CONFIGS)), size=3, replace=False).tolist())
    cases = [("the defaults", (True, 32, 128), p.call("t5_bucket_starts"))]
    for config in FIXED_BUCKET_CONFIGS + [BUCKET_CONFIGS[index] for index in picked]:
        bidirectional, num_buckets, max_distance = config
        cases.append((f"bidirectional={bidirectional}, num_buckets={num_buckets}, max_distance={max_distance}", config,
                      p.call("t5_bucket_starts", bidirectional=bidirectional, num_buckets=num_buckets,
                             max_distance=max_distance)))

    def returned(r):
        """[(starts, config)] of every case that returned a long tensor of the right shape."""
        found = []
        for _, config, h in cases:
            try:
                got = None if r.raised(h) else r.tensor(h, "t5_bucket_starts")
            except Fail:
                continue
            if got is None:
                continue
            if got.dtype == torch.long and tuple(got.shape) == (config[1],):
                found.append((got, config))
        return found

    def judge(r):
        for described, config, h in cases:
            what = f"t5_bucket_starts with {described}"
            error = r.raised(h)
            expect(error is None, f"{what} raised {error}." + (
                " A tensor of every distance up to max_distance does not fit in memory: find each start by asking "
                "t5_relative_bucket at a few distances only." if config[2] > 10**9 else ""),
                   cause="bucket_every_distance" if config[2] > 10**9 else None)
            got = r.tensor(h, what)
            expect(tuple(got.shape) == (config[1],),
                   f"{what} should return one entry per bucket, shape ({config[1]},); it returns {tuple(got.shape)}.")
            expect(got.dtype == torch.long, f"{what} returns {got.dtype}; it should return torch.long, distances.")
            ref = reference_starts(*config)
            wrong = got != ref
            if wrong.any():
                b = int(wrong.nonzero()[0, 0])
                cause = starts_cause(got, config, others=returned(r))
                raise Fail(f"{what}: {int(wrong.sum())} of {config[1]} starts differ from T5's rule, for instance that "
                           f"of bucket {b}, which yours puts at {int(got[b])}. {cause}".rstrip())

    return judge


def tokenwise(p, D, D_out):
    return Nested("Tokenwise", p.randn(D, D_out))


def add_positions(table):
    return Nested("AddPositions", table)


def mirror(p, T, D):
    """A (T, D) table that reads the same backwards, with rows that differ otherwise."""
    half = p.randn(T // 2, D)
    middle = [p.randn(1, D)] if T % 2 else []
    return torch.cat([half, *middle, half.flip(0)])


# Two cases the diagnoses read (visible_code): equivariant layers, one within the default atol, one of two tokens.
TINY = "AddPositions with entries below 1e-7"
TWO_EQUAL = "AddPositions whose two rows are equal"
VISIBLE_LAYERS = ["Tokenwise", "AddPositions", "AddToSequences", "PlainAttention",
                  "AddPositions with a table that reads the same backwards"]


def visible_code(verdicts, tiny_differences):
    """The code of the visible test's diagnosis of its five layers' verdicts (``verdicts``: name -> answer), told apart
    by ``tiny_differences``, the answer (or None) for AddPositions with entries below 1e-7 (equivariant within the
    default atol; a layer that returns no tuple): an exact comparison says False there, a wrong item of a tuple
    True. Where every answer is False, the answer for two tokens and two equal rows of positions (equivariant, and
    reversed by its inverse) tells an output reordered the inverse way (True) from one not reordered (False)."""
    truths = dict(zip(VISIBLE_LAYERS, [True, False, True, True, False]))
    wrong = [name for name in VISIBLE_LAYERS if verdicts[name] != truths[name]]
    if set(verdicts.values()) == {True}:
        return "equivariance_always_true"
    if verdicts["AddPositions"] and not verdicts["AddToSequences"]:
        return "equivariance_batch_axis"
    if wrong == ["AddPositions with a table that reads the same backwards"]:
        return "equivariance_reversal_only"
    if wrong == ["PlainAttention"]:
        return {False: "equivariance_exact", True: "equivariance_tuple_item"}.get(tiny_differences)
    return None


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
        add(TINY, add_positions(1e-7 * torch.rand(T, D, generator=p.gen)), x, True)
        add("AddPositions with entries up to 0.05, atol=0.1",
            add_positions(0.05 * torch.rand(T, D, generator=p.gen)), x, True, atol=0.1)
        add("AddPositions with entries up to 0.05, atol=1e-3",
            add_positions(0.05 * torch.rand(T, D, generator=p.gen)), x, False, atol=1e-3)
        add("PlainAttention on float64 input", Nested("PlainAttention", p.randn(D, 3 * D)), x.double(), True)
    # Two tokens: the reversal is the only reordering, and a mirror-symmetric table gives both the same vector.
    x = p.randn(3, 2, 4)
    add(TWO_EQUAL, add_positions(p.randn(1, 4).expand(2, 4).contiguous()), x, True)
    add("AddPositions whose two rows differ, num_trials=1", add_positions(p.randn(2, 4)), x, False, num_trials=1)
    # torch's global random numbers: the same after a call as before it (the notebook's helper global_rng_kept).
    rng_kept = [(label, p.call("global_rng_kept", "is_permutation_equivariant", layer, x_, num_trials=trials))
                for label, layer, x_, trials in [
                    ("Tokenwise, num_trials=3", tokenwise(p, 4, 3), p.randn(2, 6, 4), 3),
                    ("AddPositions, num_trials=6", add_positions(p.randn(9, 3)), p.randn(1, 9, 3), 6)]]
    # num_trials is used: the reversal and num_trials random orders make num_trials + 1 reordered inputs.
    x = p.randn(2, 10, 3)
    counted = [(trials, x, p.call("is_permutation_equivariant", Recorded(tokenwise(p, 3, 3)), x,
                                  num_trials=trials, after=(0, 1)))
               for trials in (0, 7)]

    def seeded_orders(r):
        """True if the recorded layer (num_trials=7) was called on the orders of a generator seeded with 0, False if
        on others, None if it tells nothing: global random numbers drawn after torch.manual_seed(0) or without it."""
        trials, x, h = counted[-1]
        try:
            inputs = None if r.raised(h) else r.after(h, 0)
            inputs = [as_tensor(item, "the recorded inputs") for item in inputs] if isinstance(inputs, list) else None
        except Fail:
            return None
        if not inputs:
            return None
        g = torch.Generator().manual_seed(0)
        wanted = [torch.randperm(x.shape[1], generator=g) for _ in range(trials)]
        return all(any(torch.equal(item, x[:, perm]) for item in inputs) for perm in wanted)

    def verdict_of(r, label, shape, x, h):
        what = f"is_permutation_equivariant for {label} (x of shape {shape}, {x.dtype})"
        verdict = r.value(h, what)
        expect(isinstance(verdict, bool), f"{what} returned a {type(verdict).__name__}; it should return True or "
                                          "False, a bool. Use torch.allclose, which returns a bool, or bool(...).")
        expect(torch.equal(as_input_at(r, h, 0, what), x), f"{what} changed its input x.")
        return what, verdict

    def answer(r, label):
        """The answer given for the first case of this label, if it is a bool (else None): for naming a cause."""
        h = next(h for case_label, _, _, _, h in cases if case_label == label)
        try:
            value = None if r.raised(h) else r.value(h, label)
        except Fail:
            return None
        return value if isinstance(value, bool) else None

    def judge(r):
        verdicts = {label: verdict_of(r, label, shape, x, h)[1] for label, shape, x, truth, h in visible}
        wrong = [label for label, _, _, truth, _ in visible if verdicts[label] != truth]
        code = None
        if wrong:
            code = visible_code(verdicts, answer(r, TINY))
            if code is None and set(verdicts.values()) == {False}:
                code = {True: "equivariance_inverse_order",
                        False: "equivariance_output_unpermuted"}.get(answer(r, TWO_EQUAL))
        expect(not wrong, f"is_permutation_equivariant is wrong for {', '.join(wrong)} on the visible test's "
                          f"layers. {visible_cause(verdicts)}".rstrip(), cause=code)
        for label, shape, x, truth, h in cases[len(visible):]:
            what, verdict = verdict_of(r, label, shape, x, h)
            within_atol = "atol" in label or "1e-7" in label
            expect(verdict == truth, f"{what} returned {verdict}; this layer is{'' if truth else ' not'} "
                                     "permutation equivariant" + (
                                         ", to within atol. Compare with torch.allclose(..., atol=atol)."
                                         if within_atol else "."),
                   # A layer equivariant to within atol judged not so, or atol's cases judged as with another
                   # tolerance: the atol argument is not the one used (allclose's own rtol may still rescue a draw).
                   cause="equivariance_atol_ignored" if within_atol and (
                       (truth and verdict is False) or ("atol=" in label and answer(r, TINY) is True)) else None)
        for label, h in rng_kept:
            what = f"is_permutation_equivariant for {label}"
            error = r.raised(h)
            expect(error is None, f"{what} raised {error}.")
            kept = r.value(h, what)
            expect(kept is True or kept is False,
                   f"{what}: the notebook's helper global_rng_kept did not answer; run the helper cell unchanged.")
            expect(kept, f"{what} changed torch's global random numbers (torch.get_rng_state() differs after the "
                         "call), which the rest of a notebook uses: draw the orders from a torch.Generator of your "
                         "own, seeded with 0, rather than seeding or drawing from torch's global one.",
                   cause={True: "equivariance_seeds_global_rng", False: "equivariance_global_rng"}.get(
                       seeded_orders(r)))
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
                   "num_trials argument?", cause="equivariance_num_trials_ignored" if reordered == 3 + 1 else None)
            g = torch.Generator().manual_seed(0)
            wanted = [torch.arange(x.shape[1] - 1, -1, -1)] + [torch.randperm(x.shape[1], generator=g)
                                                                for _ in range(trials)]
            missing = [n for n, perm in enumerate(wanted)
                       if not any(torch.equal(as_tensor(item, what), x[:, perm]) for item in inputs)]
            expect(not missing,
                   f"With num_trials={trials}, is_permutation_equivariant should call the layer on x reordered by the "
                   f"reversal and by the first {trials} orders of torch.randperm(T, generator=g), "
                   "g = torch.Generator().manual_seed(0); it did not try "
                   f"{'the reversal' if missing == [0] else f'{len(missing)} of them'}. Make the generator inside the "
                   "function, seeded with 0, and draw the orders from it one after another.")

    return judge


CHECKS = {
    "test_rope_decode_cache": test_rope_decode_cache,
    "test_rope_decode_attention": test_rope_decode_attention,
    "test_t5_bucket_starts": test_t5_bucket_starts,
    "test_is_permutation_equivariant": test_is_permutation_equivariant,
}
