"""Verification of ex07_efficient_attention (PyTorch): one check per graded test cell.

``online_softmax`` is compared with ``torch.softmax``, and ``tiled_attention``
(with and without ``causal``) and ``grouped_query_attention`` with
``F.scaled_dot_product_attention``, computed here on fresh inputs of the
visible and hidden tests' shapes and on a few shapes drawn afresh for each
run, with the hidden tests' tolerances.

That ``tiled_attention`` never holds the score matrix is checked against a
limit the sandbox enforces, not one the student's process could switch off
(the notebook's ``OpRecorder`` runs inside that process): one causal call on
a sequence whose (T, T) matrix of float64 scores alone is larger than the
sandbox's memory per process in the course being graded (its nbgrader_config.py's
``c.SandboxedKernelManager.memory_bytes``: T = 16,500 for the 2 GiB this repository sets).
An implementation that builds that matrix, or any tensor of its size, gets a
MemoryError; one that works tile by tile needs a few megabytes. As in the
hidden tests of that cell, the result must be a weighted average of the
values: when every value is the same vector u, every output is u.

``KVCache`` is driven by the notebook's locked helper ``cache_history`` and
``decode_step`` is handed the helpers' ``BufferCache``, prefilled with the
earlier positions of a sequence drawn here: each step must equal that row of
causal attention over the whole sequence. Error messages are checked on the
hidden tests' own bad inputs.
"""

import math

import torch
import torch.nn.functional as F

from tools.verification.probes import Nested, as_tensor, close_torch, expect, expect_value_error

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
SOFTMAX_TOL = {torch.float32: dict(atol=1e-6, rtol=1e-5), torch.float64: dict(atol=1e-12, rtol=1e-10)}


def expect_tensor(r, handle, what, shape, dtype):
    got = r.tensor(handle, what)
    expect(tuple(got.shape) == tuple(shape), f"{what} has shape {tuple(got.shape)}, expected {tuple(shape)}")
    expect(got.dtype == dtype, f"{what} is {got.dtype}, expected {dtype}")
    return got


def attention_inputs(p, lead, Tq, Tk, dk, dv, dtype=torch.float32):
    return p.randn(*lead, Tq, dk, dtype=dtype), p.randn(*lead, Tk, dk, dtype=dtype), p.randn(*lead, Tk, dv, dtype=dtype)


def long_sequence_length(memory):
    """The smallest round length whose (T, T) matrix of float64 scores alone exceeds ``memory`` bytes."""
    return (math.isqrt(memory // 8) // 100 + 1) * 100 + 100


# --- online_softmax ---------------------------------------------------------------------------------------


def test_online_softmax(p):
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
                      [9.0, 3.0, 1.0, 2.0, 4.0, 0.0, 5.0, 1.0, 2.0, 3.0],
                      [1.0, -2.0, 0.5, 3.0, 2.0, -1.0, 0.0, 2.5, -3.0, 4.0]])
    masked = x.clone()
    masked[:, :4] = float("-inf")
    masked[2, 8] = float("-inf")
    leading_inf = p.randn(4, 9)
    leading_inf[:, :6] = float("-inf")
    scattered = p.randn(3, 11, scale=3.0)
    scattered[torch.rand(3, 11, generator=p.gen) > 0.8] = float("-inf")
    scattered[:, 5] = 0.0
    cases = [
        ("the visible example", x, -1, None), ("the visible example, one block", x, -1, 16),
        ("the visible example - 1000", x - 1000.0, -1, None), ("the visible example + 1000", x + 1000.0, -1, None),
        ("the visible example with -inf", masked, -1, None), ("the visible example transposed, dim=0", x.T.contiguous(), 0, None),
        ("the visible example transposed, dim=-2", x.T.contiguous(), -2, None),
        ("a (5, 13) matrix, blocks of 4", p.randn(5, 13), -1, 4), ("a (5, 13) matrix, blocks of 1", p.randn(5, 13), -1, 1),
        ("a (5, 13) matrix, one block", p.randn(5, 13), -1, 64), ("a (5, 13) matrix, dim=0", p.randn(5, 13), 0, 2),
        ("a (2, 7, 6) tensor, dim=1", p.randn(2, 7, 6, scale=4.0), 1, 3), ("a (2, 7, 6) tensor, dim=-3", p.randn(2, 7, 6), -3, 4),
        ("a (2, 3, 4, 9) tensor, dim=3", p.randn(2, 3, 4, 9), 3, 2), ("17 entries", p.randn(17), 0, 5),
        ("increasing rows", torch.arange(40.0).reshape(2, 20) / 3, -1, 3),
        ("scores near +1000", p.randn(3, 10) + 1000.0, -1, 4), ("scores near -1000", p.randn(3, 10) - 1000.0, -1, 4),
        ("scores spread over thousands", p.randn(4, 11, scale=2000.0), -1, 3),
        ("rows whose first two blocks are -inf", leading_inf, -1, 3), ("scattered -inf entries", scattered, -1, 2),
        ("float64 scores", p.randn(3, 14, dtype=torch.float64, scale=5.0), -1, 3),
        ("float64 scores near -1000, dim=0", p.randn(9, 4, dtype=torch.float64) - 1000.0, 0, 4),
    ]
    for _ in range(2):  # fresh sizes
        rows, n, block = int(p.rng.integers(1, 6)), int(p.rng.integers(2, 40)), int(p.rng.integers(1, 9))
        cases.append((f"a fresh ({rows}, {n}) matrix, blocks of {block}", p.randn(rows, n, scale=3.0), -1, block))
    calls = []
    for label, xs, dim, block in cases:
        kwargs = {"dim": dim} if block is None else {"dim": dim, "block_size": block}
        calls.append((label, xs, dim, p.call("online_softmax", xs, after=(0,), **kwargs)))

    def judge(r):
        for label, xs, dim, h in calls:
            what = f"online_softmax on {label}"
            got = expect_tensor(r, h, what, xs.shape, xs.dtype)
            close_torch(got, torch.softmax(xs, dim=dim), **SOFTMAX_TOL[xs.dtype], what=what)
            expect(torch.equal(as_tensor(r.after(h, 0), what), xs), f"{what} changed its input")

    return judge


# --- tiled_attention --------------------------------------------------------------------------------------

SHAPES = [  # (leading dimensions, Tq, Tk, d_k, d_v, block_size, dtype), those of the visible and hidden tests
    ((2,), 10, 7, 9, 5, 4, torch.float32), ((2, 3), 6, 6, 4, 2, 5, torch.float32), ((), 6, 6, 4, 2, 4, torch.float32),
    ((2, 3), 17, 17, 8, 8, 5, torch.float32), ((1, 4), 33, 20, 16, 4, 8, torch.float32),
    ((3,), 9, 31, 6, 10, 1, torch.float32), ((2, 2), 12, 12, 8, 8, 64, torch.float32),
    ((), 19, 23, 7, 3, 6, torch.float32), ((1, 2), 1, 13, 5, 5, 4, torch.float32),
    ((2, 3), 15, 11, 8, 5, 4, torch.float64), ((), 21, 21, 6, 6, 3, torch.float64),
]


def fresh_shapes(p, square):
    shapes = []
    for _ in range(2):
        Tq = int(p.rng.integers(1, 40))
        Tk = Tq if square else int(p.rng.integers(1, 40))
        shapes.append(((int(p.rng.integers(1, 3)), int(p.rng.integers(1, 4))), Tq, Tk, int(p.rng.integers(1, 17)),
                       int(p.rng.integers(1, 9)), int(p.rng.integers(1, 12)), torch.float32))
    return shapes


def attention_check(p, shapes, causal):
    calls = []
    for lead, Tq, Tk, dk, dv, block, dtype in shapes:
        q, k, v = attention_inputs(p, lead, Tq, Tk, dk, dv, dtype)
        label = f"q {lead + (Tq, dk)}, k {lead + (Tk, dk)}, v {lead + (Tk, dv)}, {dtype}, block_size={block}"
        calls.append((label, q, k, v, p.call("tiled_attention", q, k, v, block, causal=causal)))

    def judge(r):
        for label, q, k, v, h in calls:
            what = f"tiled_attention on {label}, causal={causal}"
            got = expect_tensor(r, h, what, q.shape[:-1] + v.shape[-1:], q.dtype)
            tol = TOL[q.dtype]
            close_torch(got, F.scaled_dot_product_attention(q, k, v, is_causal=causal), atol=tol, rtol=tol, what=what)

    return judge


def test_tiled_attention(p):
    return attention_check(p, SHAPES + fresh_shapes(p, square=False), causal=False)


def test_tiled_attention_causal(p):
    square = [(lead, Tq, Tq, dk, dv, block, dtype) for lead, Tq, _, dk, dv, block, dtype in SHAPES]
    square += [((2, 1), 16, 16, 4, 4, 4, torch.float32), ((), 21, 21, 6, 6, 7, torch.float64)]
    return attention_check(p, square + fresh_shapes(p, square=True), causal=True)


def test_tiled_attention_memory(p):
    cases = []

    def add(label, q, k, v, block, causal, tol):
        u = torch.linspace(-1.0, 2.0, v.shape[-1], dtype=v.dtype)
        same = u.expand(v.shape).contiguous()  # every value is u: so is every weighted average of them
        cases.append((label, q, u, tol, p.call("tiled_attention", q, k, same, block, causal=causal)))

    for lead, Tq, Tk, dk, dv, block, causal, dtype in [
        ((2,), 48, 48, 8, 4, 8, False, torch.float32), ((2,), 48, 48, 8, 4, 8, True, torch.float32),
        ((2, 3), 64, 64, 8, 8, 16, True, torch.float32), ((1, 2), 40, 96, 4, 6, 8, False, torch.float32),
        ((), 50, 50, 4, 4, 7, True, torch.float64), ((3,), 33, 33, 16, 2, 5, True, torch.float32),
    ]:
        q, k, v = attention_inputs(p, lead, Tq, Tk, dk, dv, dtype)
        add(f"q {lead + (Tq, dk)}, k {lead + (Tk, dk)}, v {lead + (Tk, dv)}, {dtype}, block_size={block}, "
            f"causal={causal}", q, k, v, block, causal, TOL[dtype])
    T = long_sequence_length(p.limits.memory_bytes)
    q, k, v = attention_inputs(p, (), T, T, 2, 2, torch.float64)
    # Causal: a tiling that skips the tiles after the diagonal does half the work, and the whole matrix is as large.
    add(f"a sequence of {T} tokens, float64, block_size=1000, causal=True, whose (T, T) scores need "
        f"{T * T * 8 / 2**30:.2f} GiB", q, k, v, 1000, True, 1e-8)

    def judge(r):
        for label, q, u, tol, h in cases:
            what = f"tiled_attention on {label}"
            got = expect_tensor(r, h, what, q.shape[:-1] + u.shape, q.dtype)
            close_torch(got, u.expand(got.shape), atol=tol, rtol=0,
                        what=f"{what}, every value the same vector u: the outputs should all be u")

    return judge


# --- KVCache and decode_step ------------------------------------------------------------------------------


def test_kv_cache(p):
    cases = []
    for lead, dk, dv, lengths, dtype in [((2,), 4, 5, [3, 3], torch.float32), ((1, 3), 4, 6, [5, 1], torch.float32),
                                         ((2, 4), 8, 6, [3, 1, 1, 1], torch.float32),
                                         ((1, 2), 4, 4, [1, 1, 1], torch.float64), ((3,), 5, 2, [7, 2, 1], torch.float32),
                                         ((2, 1), 16, 3, [4], torch.float32),
                                         ((2, 2), 3, 3, [int(n) for n in p.rng.integers(1, 6, size=3)], torch.float32)]:
        chunks = [(p.randn(*lead, t, dk, dtype=dtype), p.randn(*lead, t, dv, dtype=dtype)) for t in lengths]
        label = f"chunks of {lengths} positions of shape {lead + ('t', dk)}, {dtype}"
        cases.append((label, chunks, p.call("cache_history", Nested("KVCache"), chunks)))

    def judge(r):
        for label, chunks, h in cases:
            history = r.value(h, f"KVCache with {label}")
            expect(isinstance(history, list) and len(history) == len(chunks) + 1, f"KVCache with {label}: no history")
            expect(history[0] == (None, None, 0), f"a new KVCache is not empty and of length 0 (before {label})")
            for n, state in enumerate(history[1:], 1):
                where = f"after {n} append(s) of {label}"
                expect(isinstance(state, tuple) and len(state) == 4, f"KVCache {where}: a malformed state")
                returned, keys, values, length = state
                expect(isinstance(returned, tuple) and len(returned) == 2, f"append did not return a pair {where}")
                want_k = torch.cat([c[0] for c in chunks[:n]], dim=-2)
                want_v = torch.cat([c[1] for c in chunks[:n]], dim=-2)
                for name, got, want in [("keys", keys, want_k), ("values", values, want_v),
                                        ("returned keys", returned[0], want_k), ("returned values", returned[1], want_v)]:
                    got = as_tensor(got, f"the {name} {where}")
                    expect(got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want),
                           f"the {name} are not the appended chunks, in order, {where}")
                expect(length == want_k.shape[-2], f"len(cache) is {length} {where}, not {want_k.shape[-2]}")

    return judge


def test_decode_step(p):
    cases = []
    for lead, T, prompt, dk, dv, dtype in [((2,), 6, 0, 9, 5, torch.float32), ((2, 4), 7, 0, 8, 6, torch.float32),
                                           ((1, 2), 9, 4, 16, 4, torch.float32), ((3,), 5, 2, 4, 4, torch.float64),
                                           ((2, 3), 6, 0, 6, 2, torch.float64)]:
        Q, K, V = attention_inputs(p, lead, T, T, dk, dv, dtype)
        reference = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
        label = f"a sequence of {T} tokens of shape {lead + ('T', dk)}, {dtype}"
        for t in range(prompt, T):
            cache = Nested("BufferCache", T, K[..., :t, :], V[..., :t, :]) if t else Nested("BufferCache", T)
            step = p.call("decode_step", Q[..., t:t + 1, :], K[..., t:t + 1, :], V[..., t:t + 1, :], cache)
            cases.append((f"step {t} of {label}", reference[..., t:t + 1, :], TOL[dtype], step))

    def judge(r):
        for label, want, tol, h in cases:
            what = f"decode_step at {label}"
            got = expect_tensor(r, h, what, want.shape, want.dtype)
            close_torch(got, want, atol=tol, rtol=tol, what=what)

    return judge


# --- grouped_query_attention ------------------------------------------------------------------------------


def reference_gqa(q, k, v, causal):
    n = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(n, dim=1), v.repeat_interleave(n, dim=1),
                                          is_causal=causal)


def test_grouped_query_attention(p):
    shapes = [(1, 6, 2, 5, 9, 3, False, torch.float32), (1, 6, 2, 5, 9, 3, True, torch.float32),
              (1, 6, 6, 5, 9, 3, False, torch.float32), (1, 6, 1, 5, 9, 3, False, torch.float32),
              (2, 8, 2, 7, 8, 6, False, torch.float32), (2, 8, 2, 7, 8, 6, True, torch.float32),
              (1, 4, 1, 6, 16, 4, False, torch.float32), (3, 6, 3, 5, 4, 4, True, torch.float32),
              (2, 4, 4, 6, 8, 8, True, torch.float32), (1, 12, 4, 9, 6, 5, False, torch.float64),
              (2, 6, 2, 4, 8, 3, True, torch.float64)]
    G = int(p.rng.integers(1, 4))
    shapes.append((2, G * int(p.rng.integers(1, 5)), G, int(p.rng.integers(1, 12)), 4, 4, bool(p.rng.integers(0, 2)),
                   torch.float32))
    calls = []
    for B, H, G, T, dk, dv, causal, dtype in shapes:
        q, k, v = p.randn(B, H, T, dk, dtype=dtype), p.randn(B, G, T, dk, dtype=dtype), p.randn(B, G, T, dv, dtype=dtype)
        label = f"H = {H}, G = {G}, q of shape {(B, H, T, dk)}, {dtype}, causal={causal}"
        calls.append((label, q, k, v, causal, p.call("grouped_query_attention", q, k, v, causal=causal)))

    def judge(r):
        for label, q, k, v, causal, h in calls:
            what = f"grouped_query_attention with {label}"
            got = expect_tensor(r, h, what, q.shape[:-1] + v.shape[-1:], q.dtype)
            tol = TOL[q.dtype]
            close_torch(got, reference_gqa(q, k, v, causal), atol=tol, rtol=tol, what=what)

    return judge


def test_grouped_query_attention_errors(p):
    calls = []
    for H, G in [(6, 4), (4, 3), (2, 4), (9, 6), (8, 3), (5, 2), (7, 14)]:
        calls.append((H, G, p.call("grouped_query_attention", torch.zeros(2, H, 4, 8), torch.zeros(2, G, 4, 8),
                                   torch.zeros(2, G, 4, 5))))

    def judge(r):
        for H, G, h in calls:
            expect_value_error(r, h, f"grouped_query_attention with {H} query heads and {G} key/value heads",
                               patterns=[rf"(?<![\w.]){n}(?!\w|\.\d)" for n in (H, G)])

    return judge


CHECKS = {
    "test_online_softmax": test_online_softmax,
    "test_tiled_attention": test_tiled_attention,
    "test_tiled_attention_causal": test_tiled_attention_causal,
    "test_tiled_attention_memory": test_tiled_attention_memory,
    "test_kv_cache": test_kv_cache,
    "test_decode_step": test_decode_step,
    "test_grouped_query_attention": test_grouped_query_attention,
    "test_grouped_query_attention_errors": test_grouped_query_attention_errors,
}
