"""Verification of ex02_softmax_masking (PyTorch): one check per graded test cell.

Each check asks what its test cell asks: the visible checks on the public
examples of the cell, the hidden ones on inputs of the same kinds, shapes and
dtypes, drawn afresh for every run. Error messages are checked on the hidden
tests' own bad inputs. Comparisons use ``torch.testing.assert_close`` with the
hidden tests' tolerances, run here on the plain numbers the sandbox returned.
"""

import math

import torch
import torch.nn.functional as F

from tools.verification.probes import as_tensor, close_torch, expect, expect_value_error, names_shape

TOL = {torch.float16: dict(atol=1e-3, rtol=1e-3),
       torch.float32: dict(atol=1e-6, rtol=1e-5),
       torch.float64: dict(atol=1e-12, rtol=1e-10)}


def reference_masked_softmax(scores, mask):
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0)


def expect_form(got, shape, dtype, what):
    expect(tuple(got.shape) == tuple(shape), f"{what} has shape {tuple(got.shape)}, expected {tuple(shape)}")
    expect(got.dtype == dtype, f"{what} has dtype {got.dtype}, expected {dtype}")


def expect_unchanged(r, handle, original, what):
    expect(torch.equal(as_tensor(r.after(handle, 0), what), original), f"{what} modified its input")


def expect_shape_error(r, handle, first, second, what):
    error = r.raised(handle)
    expect(error is not None, f"{what} returned instead of raising ValueError")
    expect(error.is_a("ValueError"), f"{what} raised {error.type}, not ValueError")
    expect(names_shape(error.message, first) and names_shape(error.message, second),
           f"the ValueError of {what} does not name both shapes: {error.message[:200]!r}")


def test_stable_softmax(p):
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
    t = torch.arange(24.0).reshape(2, 3, 4) % 5
    h_x = p.call("stable_softmax", x, after=(0,))
    h_big = p.call("stable_softmax", x + 1000.0)
    h_far = p.call("stable_softmax", torch.tensor([[0.0, 1.0, 2.0], [-1000.0, -999.0, -998.0]]))
    h_cols = p.call("stable_softmax", x, dim=0)
    h_t1 = p.call("stable_softmax", t, dim=1)
    h_t2 = p.call("stable_softmax", t, dim=-2)
    h_half = p.call("stable_softmax", torch.tensor([10.0, 11.0, 12.0], dtype=torch.float16), dim=0)

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
        expect_form(w, (3, 3), torch.float32, "stable_softmax(x)")
        expect_unchanged(r, h_x, x, "stable_softmax(x)")
        expect(bool(torch.isfinite(w).all()), "stable_softmax(x) contains inf or NaN")
        for i, total in enumerate(w.sum(dim=-1).tolist()):
            expect(math.isclose(total, 1.0, abs_tol=1e-5), f"row {i} of stable_softmax(x) sums to {total:.4g}")
        expect(bool((w > 0).all()), "stable_softmax(x) has weights that are not strictly positive")
        for i, j, k in [(0, 2, 0), (2, 0, 1), (2, 2, 1)]:
            ratio = (w[i, j] / w[i, k]).item()
            expect(math.isclose(ratio, math.exp(x[i, j].item() - x[i, k].item()), rel_tol=1e-4),
                   f"stable_softmax(x): the ratio of weights ({i}, {j}) and ({i}, {k}) is wrong")
        big = r.tensor(h_big, "stable_softmax(x + 1000)")
        expect(bool(torch.isfinite(big).all()), "stable_softmax(x + 1000) contains inf or NaN")
        expect(big.shape == w.shape and torch.allclose(big, w, atol=1e-6, rtol=1e-5),
               "adding 1000 to every score changed the softmax")
        far = r.tensor(h_far, "stable_softmax of two rows far apart")
        expect(tuple(far.shape) == (2, 3) and bool(torch.isfinite(far).all())
               and torch.allclose(far[0], far[1], atol=1e-6),
               "stable_softmax of the rows [0, 1, 2] and [-1000, -999, -998] does not give the same weights in both")
        cols = r.tensor(h_cols, "stable_softmax(x, dim=0)")
        expect(tuple(cols.shape) == (3, 3), f"stable_softmax(x, dim=0) has shape {tuple(cols.shape)}")
        for j, total in enumerate(cols.float().sum(dim=0).tolist()):
            expect(math.isclose(total, 1.0, abs_tol=1e-5), f"with dim=0, column {j} sums to {total:.4g}")
        t1 = r.tensor(h_t1, "stable_softmax(t, dim=1)")
        expect(tuple(t1.shape) == (2, 3, 4), f"stable_softmax(t, dim=1) has shape {tuple(t1.shape)}")
        expect(torch.allclose(t1.float().sum(dim=1), torch.ones(2, 4), atol=1e-5), "with dim=1 the sums are not 1")
        t2 = r.tensor(h_t2, "stable_softmax(t, dim=-2)")
        expect(t2.shape == t1.shape and torch.allclose(t2.float(), t1.float(), atol=1e-6),
               "dim=-2 and dim=1 gave different results")
        half = r.tensor(h_half, "stable_softmax of float16 scores")
        expect(half.dtype == torch.float16, f"float16 scores gave dtype {half.dtype}")
        expect(bool(torch.isfinite(half).all()), "stable_softmax of the float16 scores [10, 11, 12] is not finite")
        for name, x_, dim, ref, h in hidden:
            got = r.tensor(h, f"stable_softmax for {name}")
            expect(got.shape == x_.shape, f"stable_softmax changed the shape for {name}")
            expect(got.dtype == x_.dtype, f"stable_softmax returned {got.dtype} for {name}, whose dtype is {x_.dtype}")
            expect_unchanged(r, h, x_, f"stable_softmax for {name}")
            expect(bool(torch.isfinite(got).all()), f"stable_softmax gave inf or NaN for {name}")
            close_torch(got, ref, **TOL[x_.dtype], what=f"stable_softmax for {name}")

    return judge


def test_causal_mask(p):
    # Six sizes never seen before: a table of answers for a few known sizes cannot cover them all.
    sizes = [1, 2, *sorted(int(n) for n in p.rng.choice(range(3, 65), size=6, replace=False))]
    handles = [(n, p.call("causal_mask", n)) for n in [4, *sizes]]

    def judge(r):
        for n, h in handles:
            got = r.tensor(h, f"causal_mask({n})")
            expect_form(got, (n, n), torch.bool, f"causal_mask({n})")
            i = torch.arange(n)
            expect(torch.equal(got, i[:, None] >= i[None, :]), f"causal_mask({n}) is wrong")

    return judge


def test_padding_mask(p):
    visible = torch.tensor([3, 1, 4])
    h_visible = p.call("padding_mask", visible, 5)
    h_list = p.call("padding_mask", [2, 0], 3)
    rng = p.rng
    lengths_a = torch.from_numpy(rng.integers(0, 6, size=4))
    lengths_a[int(rng.integers(0, 4))] = 5
    lengths_a[int(rng.integers(0, 4))] = 0
    max_len_b = int(rng.integers(2, 10))
    cases = [
        (lengths_a, 5),
        (torch.tensor([int(rng.integers(0, 2))]), 1),
        (torch.from_numpy(rng.integers(0, 10, size=5)).to(torch.int32), 9),
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

    def reference(lengths, max_len):
        return torch.arange(max_len)[None, :] < torch.as_tensor(lengths)[:, None]

    def judge(r):
        pm = r.tensor(h_visible, "padding_mask(lengths, 5)")
        expect_form(pm, (3, 5), torch.bool, "padding_mask(lengths, 5)")
        expect(torch.equal(pm, reference(visible, 5)), "padding_mask(lengths, 5) is wrong on the visible example")
        from_list = r.tensor(h_list, "padding_mask([2, 0], 3)")
        expect(tuple(from_list.shape) == (2, 3), f"padding_mask([2, 0], 3) has shape {tuple(from_list.shape)}")
        expect(not bool(from_list[1].any()), "a sequence of length 0 does not get an all-False row")
        for lengths, max_len, h in hidden:
            label = f"padding_mask({lengths}, {max_len})"
            got = r.tensor(h, label)
            expect(got.dtype == torch.bool, f"{label} is not a bool tensor")
            expect(torch.equal(got, reference(lengths, max_len)), f"{label} is wrong")
        for bad, max_len, words, h in error_handles:
            expect_value_error(r, h, f"padding_mask({bad}, {max_len})", mentions=words)

    return judge


def test_masked_softmax(p):
    scores = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 9.0, 0.0], [2.0, 1.0, 0.0, -1.0]])
    mask = torch.tensor([[True, True, False, False], [True, False, True, True], [False, False, False, False]])
    h_visible = p.call("masked_softmax", scores, mask, after=(0,))

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

    def judge(r):
        w = r.tensor(h_visible, "masked_softmax(scores, mask)")
        expect_form(w, (3, 4), torch.float32, "masked_softmax(scores, mask)")
        expect_unchanged(r, h_visible, scores, "masked_softmax(scores, mask)")
        expect(not bool(torch.isnan(w).any()), "masked_softmax(scores, mask) returned NaN")
        expect(bool(torch.isfinite(w).all()), "masked_softmax(scores, mask) is not finite")
        expect(bool((w[~mask] == 0).all()), "a forbidden key got a non-zero weight on the visible example")
        for i in range(2):
            expect(math.isclose(w[i].sum().item(), 1.0, abs_tol=1e-5), f"row {i} of the visible example does not sum to 1")
        expect(bool((w[2] == 0).all()), "the row with no allowed key is not all zeros")
        for i, j, k in [(0, 1, 0), (1, 2, 0), (1, 0, 3)]:
            ratio = (w[i, j] / w[i, k]).item()
            expect(math.isclose(ratio, math.exp(scores[i, j].item() - scores[i, k].item()), rel_tol=1e-4),
                   f"the allowed weights ({i}, {j}) and ({i}, {k}) are in the wrong ratio")
        for name, sc, mk, ref, h in hidden:
            got = r.tensor(h, f"masked_softmax for {name}")
            expect(got.shape == sc.shape, f"masked_softmax changed the shape for {name}")
            expect(got.dtype == sc.dtype, f"masked_softmax changed the dtype for {name}")
            expect_unchanged(r, h, sc, f"masked_softmax for {name}")
            expect(not bool(torch.isnan(got).any()), f"masked_softmax returned NaN for {name}")
            expect(bool((got[~mk] == 0).all()), f"a forbidden key got a non-zero weight for {name}")
            close_torch(got, ref, atol=1e-6, rtol=1e-5, what=f"masked_softmax for {name}")

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

    # The hidden tests' constructions, with fresh numbers.
    gen = p.gen
    B, H, Tq, Tk, d = 2, 3, 5, 6, 8
    q, k = p.randn(B, H, Tq, d), p.randn(B, H, Tk, d)
    pad = (torch.arange(Tk)[None, :] < torch.tensor([6, 2])[:, None]).view(B, 1, 1, Tk)
    band = torch.arange(Tk)[None, :] <= torch.arange(Tq)[:, None] + 1
    band[4] = torch.arange(Tk) >= 3
    mask = pad & band
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
    T = 5
    left = (torch.arange(T)[None, :] >= torch.tensor([0, 3])[:, None]).view(2, 1, 1, T)
    causal = torch.arange(T)[None, :] <= torch.arange(T)[:, None]
    h_mask = left & causal
    h_scores = p.randn(2, 2, T, T, scale=6).half()
    h_big = p.randn(2, 2, T, T, scale=40).half()
    h_half_left = p.call("masked_softmax", h_scores, h_mask)
    h_half_big = p.call("masked_softmax", h_big, h_mask)
    h_grad = p.grad("masked_softmax", scores, mask, weight=p.randn(*scores.shape))
    bad_shapes = [((4, 4), (2, 4, 4)), ((2, 3, 4, 4), (2, 5)), ((3, 6), (6, 3))]
    h_errors = [(s, m, p.call("masked_softmax", torch.zeros(s), torch.ones(m, dtype=torch.bool)))
                for s, m in bad_shapes]

    def judge(r):
        for label, mk, h in h_visible:
            w4 = r.tensor(h, f"masked_softmax with a {label} mask")
            expect(tuple(w4.shape) == (2, 3, 4, 4), f"masked_softmax with a {label} mask has shape {tuple(w4.shape)}")
            expect_unchanged(r, h, scores4, f"masked_softmax with a {label} mask")
            full = mk.expand(2, 3, 4, 4)
            has_key = full.any(dim=-1)
            expect(not bool(torch.isnan(w4).any()), f"with a {label} mask, masked_softmax returned NaN")
            expect(bool((w4[~has_key] == 0).all()), f"with a {label} mask, an empty row is not all zeros")
            expect(bool((w4[~full] == 0).all()), f"with a {label} mask, a forbidden key got weight")
            sums = w4.sum(dim=-1)
            expect(len((has_key & ((sums - 1).abs() > 1e-5)).nonzero()) == 0,
                   f"with a {label} mask, a row with an allowed key does not sum to 1")
        hw = r.tensor(h_half, "masked_softmax of float16 scores")
        expect(hw.dtype == torch.float16, f"float16 scores gave dtype {hw.dtype}")
        expect(tuple(hw.shape) == (3, 5), "masked_softmax of float16 scores changed the shape")
        expect(not bool(torch.isnan(hw).any()), "masked_softmax returned NaN for float16 scores")
        expect(bool((hw[~half_mask] == 0).all()), "with float16 scores, a forbidden key got weight")
        expect(bool((hw[1] == 0).all()), "with float16 scores, the empty row is not all zeros")
        expect(abs(hw[0].float().sum().item() - 1) < 1e-2 and abs(hw[2].float().sum().item() - 1) < 1e-2,
               "with float16 scores, the rows with an allowed key do not sum to 1")
        expect_shape_error(r, h_visible_error, (2, 4), (3, 4), "masked_softmax(scores (2, 4), mask (3, 4))")

        close_torch(r.tensor(h_sdpa, "masked_softmax"), sdpa_weights, atol=1e-5, rtol=1e-4,
                    what="masked_softmax against the weights of scaled_dot_product_attention")
        for name, s, m, ref, h in hidden:
            got = r.tensor(h, f"masked_softmax for {name}")
            expect(got.shape == s.shape, f"wrong shape for {name}")
            expect(not bool(torch.isnan(got).any()), f"masked_softmax returned NaN for {name}")
            close_torch(got, ref, atol=1e-6, rtol=1e-5, what=f"masked_softmax for {name}")
        got = r.tensor(h_half_left, "masked_softmax of float16 scores with left padding")
        expect(got.dtype == torch.float16, "masked_softmax should return float16 for float16 scores")
        close_torch(got, reference_masked_softmax(h_scores, h_mask), atol=1e-3, rtol=1e-3,
                    what="masked_softmax for float16 scores with left padding")
        close_torch(r.tensor(h_half_big, "masked_softmax of large float16 scores"),
                    reference_masked_softmax(h_big, h_mask), atol=1e-3, rtol=1e-3,
                    what="masked_softmax for large float16 scores")
        grad = r.value(h_grad, "the gradient of masked_softmax")
        expect(grad is not None, "masked_softmax gives no gradient with respect to the scores")
        expect(bool(torch.isfinite(as_tensor(grad, "the gradient")).all()),
               "the gradient of masked_softmax with respect to the scores contains inf or NaN")
        for s, m, h in h_errors:
            expect_shape_error(r, h, s, m, f"masked_softmax(scores {s}, mask {m})")

    return judge


CHECKS = {
    "test_stable_softmax": test_stable_softmax,
    "test_causal_mask": test_causal_mask,
    "test_padding_mask": test_padding_mask,
    "test_masked_softmax": test_masked_softmax,
    "test_masked_softmax_broadcast": test_masked_softmax_broadcast,
}
