"""The checks of ex07_efficient_attention (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Each check asks what its cell's hidden tests
asked and what its visible tests ask, on inputs of the same shapes, with the
same tolerances. A failed check's message is what the student reads in the
feedback: which function, on what input, how far off and the likely cause,
never the expected numbers.

``online_softmax`` is compared with ``torch.softmax``, and ``tiled_attention``
(with and without ``causal``) and ``grouped_query_attention`` with
``F.scaled_dot_product_attention``. What a function computes on the way (no
``softmax`` of PyTorch's, no reduction over more than a block, no built-in
attention, no tensor as large as a score matrix, no ``enable_gqa``) is read
with the notebook's ``OpRecorder``, through its helper ``recorded_ops``.

That ``tiled_attention`` never holds the score matrix is also checked against
a limit the sandbox enforces, not one the student's process could switch off
(``OpRecorder`` runs inside that process): one causal call on a sequence whose
(T, T) matrix of float64 scores alone is larger than the memory of a process
(``p.limits.memory_bytes``: outside the kernel, the graded course's
``c.SandboxedKernelManager.memory_bytes``; in the kernel, its own RLIMIT_AS,
which the sandbox sets to that same value: T = 16,500 for the 2 GiB this
repository sets). An implementation that builds that matrix, or any tensor of
its size, gets a MemoryError; one that works tile by tile needs a few
megabytes. As everywhere in that cell, the result must be a weighted average
of the values: when every value is the same vector u, every output is u.

``KVCache`` is driven by the notebook's locked helper ``cache_history``, and
``decode_step`` is handed the helpers' ``BufferCache``: once per step,
prefilled with the earlier positions of a sequence drawn here, and once for a
whole sequence (``decode_steps``), which must append one position per step.
Each step must equal that row of causal attention over the whole sequence.
"""

import math

import torch
import torch.nn.functional as F

from tools.verification.probes import Nested, as_tensor, close_torch, expect

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
SOFTMAX_TOL = {torch.float32: dict(atol=1e-6, rtol=1e-5), torch.float64: dict(atol=1e-12, rtol=1e-10)}
# PyTorch's own attention functions: their names contain one of these (the notebook's BUILT_IN_ATTENTION).
BUILT_IN_ATTENTION = ("scaled_dot_product", "multi_head_attention", "flash_attention", "efficient_attention")
REDUCTIONS = ("amax", "max", "sum", "nansum", "logsumexp", "mean", "amin", "min", "cumsum", "sort", "topk")


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
    """(result, operations) of a probe of the notebook's ``recorded_ops``: each operation (name, shapes given,
    shapes returned, the keyword options that were True)."""
    value = returned(r, handle, what)
    expect(isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[1], list),
           f"{what}: the notebook's helper recorded_ops did not answer; run the helper cell unchanged.")
    return value


def root(d_k):
    """sqrt(d_k) as a message writes it: 3 for 9, sqrt(8) for 8."""
    return f"{math.isqrt(d_k)}" if math.isqrt(d_k) ** 2 == d_k else f"sqrt({d_k})"


def long_sequence_length(memory):
    """The smallest round length whose (T, T) matrix of float64 scores alone exceeds ``memory`` bytes."""
    return (math.isqrt(memory // 8) // 100 + 1) * 100 + 100


# --- online_softmax ---------------------------------------------------------------------------------------

VISIBLE_X = [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],  # the maximum grows in every block
             [9.0, 3.0, 1.0, 2.0, 4.0, 0.0, 5.0, 1.0, 2.0, 3.0],  # the maximum is in the first block
             [1.0, -2.0, 0.5, 3.0, 2.0, -1.0, 0.0, 2.5, -3.0, 4.0]]  # (3, 10): blocks of 4, 4 and 2


def softmax_cause(got, xs, dim, label, whole, first8):
    """Why online_softmax's result ``got`` on ``xs`` is wrong, as far as can be told: the visible test's
    diagnoses. ``whole`` and ``first8`` are its results on the visible example in one block and on its first
    8 columns (or None)."""
    if not torch.isfinite(got).all() and torch.isfinite(torch.softmax(xs, dim=dim)).all():
        if "-inf" in label:
            return ("It contains NaN. While every entry read so far is -inf, m and m_new are both -inf and "
                    "exp(m - m_new) = exp(-inf + inf) is NaN: measure from 0 while m_new is still -inf (torch.where).")
        if "1000" in label and "+" not in label:
            return ("It contains NaN or inf. Far below 0, e^(entry - m) underflows to 0 unless m is the largest entry "
                    "read so far: does the running maximum start at -inf? Started at 0, it stays 0 here.")
        return "It contains NaN or inf: subtract the running maximum before you exponentiate."
    if xs.dim() > 1 and dim % xs.dim() != xs.dim() - 1 and same(got, torch.softmax(xs, dim=-1), 1e-5):
        return ("It looks like a softmax along the last dimension: use dim (x.movedim(dim, -1) puts it last, "
                ".movedim(-1, dim) puts it back).")
    if first8:
        return ("On the first 8 entries of each row of the visible example (two whole blocks) it is right; with 10 "
                "entries, the last block holds only 2. Does your loop reach it? range(0, N, block_size) does, and "
                "xs[..., start:start + block_size] stops at the end of the row by itself.")
    if whole:
        return ("On the visible example with a single block (block_size=16) it is right, in blocks it is not: the "
                "running sum should collect the terms of every block, those already in it rescaled by "
                "exp(m - m_new) when the maximum grows, the new ones measured from m_new.")
    return ""


def test_online_softmax(p):
    x = torch.tensor(VISIBLE_X)
    masked = x.clone()
    masked[:, :4] = float("-inf")  # a whole first block of -inf, as a causal or padding mask makes
    masked[2, 8] = float("-inf")
    leading_inf = p.randn(4, 9)
    leading_inf[:, :6] = float("-inf")  # the first two blocks of 3 are -inf
    scattered = p.randn(3, 11, scale=3.0)
    scattered[p.randn(3, 11) > 0.8] = float("-inf")
    scattered[:, 5] = 0.0  # every row keeps a finite entry
    cases = [
        ("the visible example", x, -1, None), ("the visible example - 1000", x - 1000.0, -1, None),
        ("the visible example + 1000", x + 1000.0, -1, None),
        ("the visible example with -inf entries", masked, -1, None),
        ("the visible example transposed, dim=0", x.T.contiguous(), 0, None),
        ("the visible example transposed, dim=-2", x.T.contiguous(), -2, None),
        ("a (6, 10) matrix, the default block_size", p.randn(6, 10), -1, None),
        ("a (5, 13) matrix, blocks of 4", p.randn(5, 13), -1, 4),
        ("a (5, 13) matrix, blocks of 1", p.randn(5, 13), -1, 1),
        ("a (5, 13) matrix, one block of 64", p.randn(5, 13), -1, 64),
        ("a (5, 13) matrix, blocks of 2, dim=0", p.randn(5, 13), 0, 2),
        ("a (2, 7, 6) tensor, blocks of 3, dim=1", p.randn(2, 7, 6, scale=4.0), 1, 3),
        ("a (2, 7, 6) tensor, blocks of 4, dim=-3", p.randn(2, 7, 6), -3, 4),
        ("a (2, 3, 4, 9) tensor, blocks of 2, dim=3", p.randn(2, 3, 4, 9), 3, 2),
        ("a 1-D tensor of 17 entries, blocks of 5", p.randn(17), 0, 5),
        ("increasing rows, blocks of 3", torch.arange(40.0).reshape(2, 20) / 3, -1, 3),
        ("scores near +1000, blocks of 4", p.randn(3, 10) + 1000.0, -1, 4),
        ("scores near -1000, blocks of 4", p.randn(3, 10) - 1000.0, -1, 4),
        ("scores spread over thousands, blocks of 3", p.randn(4, 11, scale=2000.0), -1, 3),
        ("rows whose first two blocks are -inf, blocks of 3", leading_inf, -1, 3),
        ("rows with scattered -inf entries, blocks of 2", scattered, -1, 2),
        ("float64 scores, blocks of 3", p.randn(3, 14, dtype=torch.float64, scale=5.0), -1, 3),
        ("float64 scores near -1000, blocks of 4, dim=0", p.randn(9, 4, dtype=torch.float64) - 1000.0, 0, 4),
    ]
    for _ in range(2):  # fresh sizes
        rows, n, block = int(p.rng.integers(1, 6)), int(p.rng.integers(2, 40)), int(p.rng.integers(1, 9))
        cases.append((f"a fresh ({rows}, {n}) matrix, blocks of {block}", p.randn(rows, n, scale=3.0), -1, block))
    calls = []
    for label, xs, dim, block in cases:
        kwargs = {"dim": dim} if block is None else {"dim": dim, "block_size": block}
        calls.append((label, xs, dim, p.call("online_softmax", xs, after=(0,), **kwargs)))
    h_whole = p.call("online_softmax", x, block_size=16)
    h_first8 = p.call("online_softmax", x[:, :8].contiguous())
    # What it runs: with blocks of 3 on the visible (3, 10) example, and blocks of 2 along dim 1 of a (4, 7, 5) tensor.
    op_cases = [("With block_size=3, online_softmax(x) for x of shape (3, 10)", 3 * 3,
                 p.call("recorded_ops", "online_softmax", x, block_size=3)),
                ("With block_size=2 and dim=1 on a (4, 7, 5) tensor, online_softmax", 4 * 5 * 2,
                 p.call("recorded_ops", "online_softmax", p.randn(4, 7, 5), dim=1, block_size=2))]

    def judge(r):
        def right(h, xs, what):
            if r.raised(h) is not None:
                return False
            got = r.value(h, what)
            return _is_array(got) and same(as_tensor(got, what), torch.softmax(xs, dim=-1), 1e-5)

        whole = right(h_whole, x, "online_softmax(x, block_size=16)")
        first8 = right(h_first8, x[:, :8], "online_softmax(x[:, :8])")
        for label, xs, dim, h in calls:
            what = f"online_softmax on {label}"
            got = expect_tensor(r, h, what, xs.shape, xs.dtype)
            expect(torch.equal(as_tensor(r.after(h, 0), what), xs),
                   f"{what} changed its input x. x.movedim(...) and x[..., a:b] are views of x: compute new tensors "
                   "(xs - m) instead of changing them in place (xs -= m, .exp_(), ...).")
            tol = SOFTMAX_TOL[xs.dtype]
            cause = softmax_cause(got, xs, dim, label, whole, first8)
            close_torch(got, torch.softmax(xs, dim=dim), **tol, what="online_softmax", on=label,
                        cause=f"(Compared with torch.softmax, atol={tol['atol']:g}, rtol={tol['rtol']:g}.) "
                              f"{cause}".rstrip())
        for what, most, h in op_cases:
            _, ops = recorded(r, h, what)
            for name, inputs, _, _ in ops:
                expect("softmax" not in str(name),
                       f"online_softmax calls {name}: the task is to compute the softmax yourself, block by block.")
                if name in REDUCTIONS:
                    widest = max(inputs, key=math.prod, default=[])
                    expect(math.prod(widest) <= most,
                           f"{what} called {name} on a tensor of shape {tuple(widest)}, more than a block of each "
                           "row at once. Read x one block at a time, in a loop, and keep only the running maximum "
                           "and the running sum between blocks.")

    return judge


# --- tiled_attention --------------------------------------------------------------------------------------

# (leading dimensions, Tq, Tk, d_k, d_v, block_size, dtype): the visible tests' shapes, then the hidden tests'.
SHAPES = [
    ((2,), 10, 7, 9, 5, 4, torch.float32), ((2, 3), 6, 6, 4, 2, 5, torch.float32), ((), 6, 6, 4, 2, 4, torch.float32),
    ((2, 3), 17, 17, 8, 8, 5, torch.float32), ((1, 4), 33, 20, 16, 4, 8, torch.float32),
    ((3,), 9, 31, 6, 10, 1, torch.float32), ((2, 2), 12, 12, 8, 8, 64, torch.float32),
    ((), 19, 23, 7, 3, 6, torch.float32), ((2, 1), 8, 8, 4, 4, 8, torch.float32),
    ((1, 2), 1, 13, 5, 5, 4, torch.float32), ((2, 3), 15, 11, 8, 5, 4, torch.float64),
    ((), 21, 21, 6, 6, 3, torch.float64),
]
CAUSAL_SHAPES = [
    ((2,), 10, 10, 9, 5, 4, torch.float32),
    ((2, 3), 17, 17, 8, 8, 5, torch.float32), ((1, 4), 33, 33, 16, 4, 8, torch.float32),
    ((3,), 9, 9, 6, 10, 1, torch.float32), ((2, 2), 12, 12, 8, 8, 64, torch.float32),
    ((), 23, 23, 7, 3, 6, torch.float32), ((2, 1), 16, 16, 4, 4, 4, torch.float32),
    ((1, 2), 1, 1, 5, 5, 4, torch.float32), ((2, 3), 15, 15, 8, 5, 3, torch.float64),
    ((), 21, 21, 6, 6, 7, torch.float64),
    # shapes the checks asked besides
    ((2, 3), 6, 6, 4, 2, 5, torch.float32), ((), 6, 6, 4, 2, 4, torch.float32), ((), 19, 19, 7, 3, 6, torch.float32),
    ((2, 3), 15, 15, 8, 5, 4, torch.float64), ((), 21, 21, 6, 6, 3, torch.float64),
]


def fresh_shapes(p, square):
    shapes = []
    for _ in range(2):
        Tq = int(p.rng.integers(1, 40))
        Tk = Tq if square else int(p.rng.integers(1, 40))
        shapes.append(((int(p.rng.integers(1, 3)), int(p.rng.integers(1, 4))), Tq, Tk, int(p.rng.integers(1, 17)),
                       int(p.rng.integers(1, 9)), int(p.rng.integers(1, 12)), torch.float32))
    return shapes


def tiled_cause(got, q, k, v, block, causal, one_block, plain):
    """The likely mistake behind a wrong result of tiled_attention, from the visible tests' diagnoses. ``one_block``
    is its result on the same inputs in a single block, ``plain`` (causal only) its result without causal."""
    def attention(q_, k_, v_, causal_=causal):
        return F.scaled_dot_product_attention(q_, k_, v_, is_causal=causal_)

    d_k, Tq, Tk = q.shape[-1], q.shape[-2], k.shape[-2]
    tol = TOL[q.dtype]
    if torch.isnan(got).any():
        if causal:
            return ("It contains NaN: a query was left without any key. The tile on the diagonal holds each query's "
                    "own key: compute it, with only the keys j > i masked, rather than skip it or mask it whole.")
        return "It contains NaN: measure from 0 while the running maximum is still -inf."
    if same(got, attention(q * math.sqrt(d_k), k, v), tol):
        return f"It matches attention without the scale: divide the scores by sqrt(d_k) = {root(d_k)}."
    if d_k > 1 and same(got, attention(q / math.sqrt(d_k), k, v), tol):
        return f"It matches scores divided by d_k = {d_k}: divide by sqrt(d_k) instead."
    if causal and plain is not None and not same(plain, attention(q, k, v, False), tol):
        return "Without causal=True, tiled_attention is wrong on these inputs too: pass the test above first."
    if causal and same(got, attention(q, k, v, False), tol):
        return "It matches attention without a mask: with causal=True, query i may attend to keys j <= i only."
    if not causal and Tk % block and Tk > block and same(got, attention(q, k[..., :Tk - Tk % block, :],
                                                                         v[..., :Tk - Tk % block, :]), tol):
        return (f"It matches attention over the first {Tk - Tk % block} keys only: the last block of keys, "
                f"{Tk % block} long, is left out. Loop over range(0, Tk, block_size); k[..., j0:j0 + block_size, :] "
                "stops at the last key by itself.")
    if causal:
        reference = attention(q, k, v)
        wrong = [i for i in range(Tq) if not same(got[..., i, :], reference[..., i, :], tol)]
        if wrong and all(i >= block for i in wrong):
            return ("The first block of queries is right and later ones are not: compare the positions in the whole "
                    "sequence, i0 + row and j0 + column, not the positions inside the tile, and mask only where j > i.")
        if wrong and Tq - 1 not in wrong:
            return ("The last query, which may see every key, is right, and earlier queries are not: they must not "
                    "see later keys. Skip the blocks of keys after the block of queries, and mask j > i in the tile "
                    "on the diagonal.")
    if one_block is not None and same(one_block, attention(q, k, v), tol) and max(Tq, Tk) > block:
        return ("In a single block it is right, so the blocks are combined wrongly: each new maximum must rescale the "
                "running output and the running sum by c = exp(m - m_new), and every block's terms be added to them.")
    return ""


def attention_check(p, shapes, causal):
    calls = []
    for lead, Tq, Tk, dk, dv, block, dtype in shapes:
        q, k, v = attention_inputs(p, lead, Tq, Tk, dk, dv, dtype)
        label = (f"q of shape {lead + (Tq, dk)}, k {lead + (Tk, dk)}, v {lead + (Tk, dv)}, {dtype}, "
                 f"block_size={block}" + (", causal=True" if causal else ""))
        kwargs = {"causal": True} if causal else {}
        h = p.call("tiled_attention", q, k, v, block, **kwargs)
        h_one = p.call("tiled_attention", q, k, v, max(Tq, Tk, 1), **kwargs)  # a single block: for the diagnosis
        h_plain = p.call("tiled_attention", q, k, v, block) if causal else None
        calls.append((label, q, k, v, block, h, h_one, h_plain))

    def judge(r):
        def result(h, what):
            if h is None or r.raised(h) is not None:
                return None
            got = r.value(h, what)
            return as_tensor(got, what) if _is_array(got) else None

        for label, q, k, v, block, h, h_one, h_plain in calls:
            what = f"tiled_attention on {label}"
            hint = ("Loop over range(0, Tq, block_size): q[..., i0:i0 + block_size, :] stops at the last query by "
                    "itself, and index the last two axes so that any leading axes pass through.")
            got = expect_tensor(r, h, what, q.shape[:-1] + v.shape[-1:], q.dtype, hint)
            tol = TOL[q.dtype]
            reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            if not same(got, reference, tol):
                cause = tiled_cause(got, q, k, v, block, causal, result(h_one, what), result(h_plain, what))
            else:
                cause = ""
            close_torch(got, reference, atol=tol, rtol=tol, what="tiled_attention", on=label,
                        cause=f"(Compared with F.scaled_dot_product_attention"
                              f"{'(..., is_causal=True)' if causal else ''}, atol=rtol={tol:g}.) {cause}".rstrip())

    return judge


def test_tiled_attention(p):
    return attention_check(p, SHAPES + fresh_shapes(p, square=False), causal=False)


def test_tiled_attention_causal(p):
    return attention_check(p, CAUSAL_SHAPES + fresh_shapes(p, square=True), causal=True)


def score_sized(ops, Tq, Tk, width):
    """The first (operation, shape) that returned a tensor whose last two dimensions hold Tq * Tk numbers or more,
    as many as one head's whole score matrix, or None (the notebook's score_sized). Tensors whose last dimension
    is at most width (the widest of d_k and d_v) hold features, not scores, and are not counted."""
    for name, _, outputs, _ in ops:
        for shape in outputs:
            if shape and shape[-1] > width and math.prod(shape[-2:]) >= Tq * Tk:
                return name, tuple(shape)
    return None


def test_tiled_attention_memory(p):
    cases = []
    for lead, Tq, Tk, dk, dv, block, causal, dtype in [
        ((2,), 48, 48, 8, 4, 8, False, torch.float32), ((2,), 48, 48, 8, 4, 8, True, torch.float32),  # visible
        ((2, 3), 64, 64, 8, 8, 16, False, torch.float32), ((2, 3), 64, 64, 8, 8, 16, True, torch.float32),
        ((1, 2), 40, 96, 4, 6, 8, False, torch.float32), ((), 50, 50, 4, 4, 7, True, torch.float64),
        ((3,), 33, 33, 16, 2, 5, True, torch.float32), ((1, 1), 4096, 4096, 16, 16, 512, False, torch.float32),
        ((1, 1), 4096, 4096, 16, 16, 512, True, torch.float32),
    ]:
        q, k, v = attention_inputs(p, lead, Tq, Tk, dk, dv, dtype)
        u = torch.linspace(-1.0, 2.0, dv, dtype=dtype)
        same_values = u.expand(v.shape).contiguous()  # every value is u: so is every weighted average of them
        label = (f"q of shape {lead + (Tq, dk)}, k {lead + (Tk, dk)}, v {lead + (Tk, dv)}, {dtype}, "
                 f"block_size={block}, causal={causal}")
        cases.append((label, q, k, u, block, causal, TOL[dtype], 1e-5,
                      p.call("recorded_ops", "tiled_attention", q, k, same_values, block, causal)))
    T = long_sequence_length(p.limits.memory_bytes)
    q_long, k_long, v_long = attention_inputs(p, (), T, T, 2, 2, torch.float64)
    u_long = torch.linspace(-1.0, 2.0, 2, dtype=torch.float64)
    # Causal: a tiling that skips the tiles after the diagonal does half the work, and the whole matrix is as large.
    long_label = (f"a sequence of {T} tokens, float64, block_size=1000, causal=True, whose (T, T) scores need "
                  f"{T * T * 8 / 2**30:.2f} GiB, more than the memory of the process")
    h_long = p.call("tiled_attention", q_long, k_long, u_long.expand(v_long.shape).contiguous(), 1000, causal=True)

    def check_u(got, u, tol, rtol, what):
        close_torch(got, u.expand(got.shape), atol=tol, rtol=rtol, what=what,
                    on="values that are all the same vector u",
                    cause="When every value is the same vector u, every output should be u, because the weights of a "
                          "query sum to 1: divide the running output by the running sum at the end, and rescale both "
                          "by c = exp(m - m_new) whenever the maximum grows.")

    def judge(r):
        for label, q, k, u, block, causal, tol, rtol, h in cases:
            what = f"tiled_attention(q, k, v, block_size={block}, causal={causal}) with {label}"
            got, ops = recorded(r, h, what)
            built_in = [name for name, *_ in ops if any(word in str(name) for word in BUILT_IN_ATTENTION)]
            expect(not built_in, f"{what} calls {built_in[0] if built_in else ''}: compute the tiles yourself; "
                                 "PyTorch's attention is what the tests compare you with.")
            Tq, Tk = q.shape[-2], k.shape[-2]
            largest = score_sized(ops, Tq, Tk, max(q.shape[-1], u.shape[-1]))
            maker, made = largest or ("", ())
            expect(largest is None,
                   f"{what} made a tensor of shape {made} (with {maker}), which holds {Tq} × {Tk} numbers or more "
                   f"per head: as many as the whole score matrix. Compute the scores one tile (at most block_size × "
                   f"block_size) at a time"
                   f"{', and mask the tile on the diagonal alone' if causal else ''}.")
            expect(_is_array(got), f"{what} should return a torch.Tensor, but it does not.")
            got = as_tensor(got, what)
            shape = q.shape[:-1] + u.shape
            expect(tuple(got.shape) == tuple(shape),
                   f"{what} should have shape {tuple(shape)}, but it has shape {tuple(got.shape)}.")
            check_u(got, u, tol, rtol, f"tiled_attention with {label}")
        error = r.raised(h_long)
        expect(error is None or not error.is_a("MemoryError"),
               f"tiled_attention on {long_label} ran out of memory (MemoryError): it made a tensor as large as the "
               "whole score matrix. Compute the scores one tile (at most block_size × block_size) at a time, skip the "
               "tiles after the diagonal, and mask the tile on the diagonal alone.")
        got = expect_tensor(r, h_long, f"tiled_attention on {long_label}", q_long.shape[:-1] + u_long.shape,
                            q_long.dtype)
        check_u(got, u_long, 1e-8, 0, f"tiled_attention on {long_label}")

    return judge


# --- KVCache and decode_step ------------------------------------------------------------------------------


def kv_causes(parts):
    """{shape: likely cause} for the shapes the usual mistakes give after appending ``parts`` (the visible test's)."""
    causes = {}
    if len(parts) > 1:
        for dim, text in [(0, " They are concatenated along dimension 0, the batch: the token axis is -2."),
                          (-1, " They are concatenated along the last dimension, the features: the token axis is -2.")]:
            try:
                causes[tuple(torch.cat(parts, dim=dim).shape)] = text
            except RuntimeError:  # chunks of other lengths cannot be concatenated there
                pass
        if parts[-1].shape[-2] != sum(part.shape[-2] for part in parts):
            causes.setdefault(tuple(parts[-1].shape), " They are the new positions only: return everything the cache "
                                                      "holds.")
    return causes


def test_kv_cache(p):
    cases = []
    for lead, dk, dv, lengths, dtype in [((2,), 4, 5, [3, 3], torch.float32), ((1, 3), 4, 6, [5, 1], torch.float32),
                                         ((2, 4), 8, 6, [3, 1, 1, 1], torch.float32),
                                         ((1, 2), 4, 4, [1, 1, 1], torch.float64),
                                         ((3,), 5, 2, [7, 2, 1], torch.float32),
                                         ((2, 1), 16, 3, [4], torch.float32),
                                         ((2, 2), 3, 3, [int(n) for n in p.rng.integers(1, 6, size=3)], torch.float32)]:
        chunks = [(p.randn(*lead, t, dk, dtype=dtype), p.randn(*lead, t, dv, dtype=dtype)) for t in lengths]
        label = f"chunks of {lengths} positions of shape {lead + ('t', dk)}, {dtype}"
        cases.append((label, lead, chunks, p.call("cache_history", Nested("KVCache"), chunks)))

    def judge(r):
        for n_case, (label, lead, chunks, h) in enumerate(cases):
            error = r.raised(h)
            expect(error is None or n_case == 0,
                   f"A new KVCache filled with {label}, after other caches were filled, raised "
                   f"{error.type if error else ''}: {error.message[:200] if error else ''}. If it holds what another "
                   "cache appended, the caches share their state: set self.keys and self.values in __init__, "
                   "rather than as class attributes.")
            history = returned(r, h, f"A KVCache filled with {label}")
            expect(isinstance(history, list) and len(history) == len(chunks) + 1,
                   f"A KVCache filled with {label} left no history: run the helper cell unchanged.")
            expect(isinstance(history[0], tuple) and history[0][:2] == (None, None),
                   f"A new KVCache should hold nothing yet, keys and values None (before {label}). If another "
                   "cache was filled before it, the caches share their state: set self.keys and self.values in "
                   "__init__, rather than as class attributes.")
            expect(history[0][2] == 0, f"A new KVCache should have length 0 (before {label}); it has {history[0][2]}.")
            for n, state in enumerate(history[1:], 1):
                where = f"after {n} append(s) of {label}"
                expect(isinstance(state, tuple) and len(state) == 4, f"The KVCache {where} is in a malformed state.")
                given, keys, values, length = state
                expect(isinstance(given, tuple) and len(given) == 2,
                       f"cache.append(k, v) should return the pair (cache.keys, cache.values); it did not {where}.")
                want_k = torch.cat([c[0] for c in chunks[:n]], dim=-2)
                want_v = torch.cat([c[1] for c in chunks[:n]], dim=-2)
                for name, got, want in [("keys", keys, want_k), ("values", values, want_v),
                                        ("returned keys", given[0], want_k), ("returned values", given[1], want_v)]:
                    expect(_is_array(got), f"The {name} {where} should be a torch.Tensor; they are not.")
                    got = as_tensor(got, f"the {name} {where}")
                    causes = kv_causes([c[0 if "keys" in name else 1] for c in chunks[:n]])
                    expect(got.shape == want.shape,
                           f"The {name} {where} should have shape {tuple(want.shape)}; they have "
                           f"{tuple(got.shape)}.{causes.get(tuple(got.shape), '')}")
                    expect(got.dtype == want.dtype and torch.equal(got, want),
                           f"The {name} {where} should be the appended chunks, in order, along dimension -2; "
                           "they are not.")
                if length != want_k.shape[-2]:
                    counted = {n: "the number of appends", want_k.shape[0]: "the batch size (dimension 0)",
                               want_k.shape[-1]: "the width d_k (the last dimension)"}
                    if want_k.dim() > 3:
                        counted.setdefault(want_k.shape[1], "the number of heads (dimension 1)")
                    counted.pop(want_k.shape[-2], None)
                    expect(False, f"len(cache) should be {want_k.shape[-2]} {where}; it is {length}."
                           + (f" That is {counted[length]}: count positions, the size of dimension -2."
                              if length in counted else ""))

    return judge


def decode_cause(got, Q, K, V):
    """The likely mistake behind decode_step's outputs ``got`` over a whole sequence (the visible test's)."""
    tol = TOL[Q.dtype]
    if same(got, V, tol):
        return ("Every step's output is its own value v: the query attended to the newest token only. Attend to "
                "every cached key, what cache.append(k, v) returns.")
    if same(got, V[..., :1, :].expand(V.shape), tol):
        return ("Every step's output is the first token's value: the query saw key 0 only, as is_causal=True does "
                "for a single query. No mask is needed: every cached key is in the past.")
    if same(got, V.cumsum(dim=-2), tol):
        return ("Every step's output is the sum of the values so far: every weight is 1, as a softmax over the single "
                "query (dim=-2) makes them. Take the softmax over the keys, the last dimension.")
    d_k = Q.shape[-1]
    if same(got, F.scaled_dot_product_attention(Q * math.sqrt(d_k), K, V, is_causal=True), tol):
        return f"It matches attention without the scale: divide the scores by sqrt(d_k) = {root(d_k)}."
    return ""


def test_decode_step(p):
    cases, sequences = [], []
    for lead, T, prompt, dk, dv, dtype in [((2,), 6, 0, 9, 5, torch.float32), ((2, 4), 7, 0, 8, 6, torch.float32),
                                           ((1, 2), 9, 4, 16, 4, torch.float32), ((3,), 5, 2, 4, 4, torch.float64),
                                           ((2, 3), 6, 0, 6, 2, torch.float64)]:
        Q, K, V = attention_inputs(p, lead, T, T, dk, dv, dtype)
        reference = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
        label = f"a sequence of {T} tokens of shape {lead + ('T', dk)}, {dtype}, after a prompt of {prompt}"
        # One cache for the whole sequence, one decode_step per token after the prompt.
        cache = Nested("BufferCache", T, K[..., :prompt, :], V[..., :prompt, :]) if prompt else Nested("BufferCache", T)
        sequences.append((label, Q, K, V, prompt, p.call("decode_steps", Q, K, V, cache, prompt)))
        for t in range(prompt, T):  # and each step alone, on a cache that holds the positions before it
            cache = Nested("BufferCache", T, K[..., :t, :], V[..., :t, :]) if t else Nested("BufferCache", T)
            step = p.call("decode_step", Q[..., t:t + 1, :], K[..., t:t + 1, :], V[..., t:t + 1, :], cache)
            cases.append((f"step {t} of {label}, alone on a cache of the {t} positions before it",
                          reference[..., t:t + 1, :], step))

    def judge(r):
        for label, Q, K, V, prompt, h in sequences:
            value = returned(r, h, f"decode_step over {label}")
            expect(isinstance(value, tuple) and len(value) == 2,
                   f"decode_step over {label}: the helper decode_steps did not answer; run the helper cell unchanged.")
            steps, appended = value
            T = Q.shape[-2]
            expect(appended == [1] * (T - prompt),
                   f"decode_step should append its k and v, one position, to the cache at every step; over {label} "
                   f"the cache saw appends of {appended} positions.")
            outputs = []
            for t, step in zip(range(prompt, T), steps):
                what = f"decode_step's output at step {t} of {label}"
                expect(_is_array(step), f"{what} should be a torch.Tensor; it is not.")
                step = as_tensor(step, what)
                shape = Q.shape[:-2] + (1, V.shape[-1])
                expect(step.shape == shape, f"{what} should have shape {tuple(shape)}, but it has shape "
                                            f"{tuple(step.shape)}.")
                expect(step.dtype == Q.dtype, f"{what} should have the dtype of q, {Q.dtype}; it has {step.dtype}.")
                outputs.append(step)
            got = torch.cat(outputs, dim=-2)
            tol = TOL[Q.dtype]
            want = F.scaled_dot_product_attention(Q, K, V, is_causal=True)[..., prompt:, :]
            cause = decode_cause(got, Q[..., prompt:, :], K[..., prompt:, :], V[..., prompt:, :]) if not prompt else ""
            close_torch(got, want, atol=tol, rtol=tol, what="decode_step", on=f"every step of {label}",
                        cause=f"(Compared with causal attention over the whole sequence, atol=rtol={tol:g}.) "
                              f"{cause}".rstrip())
        for label, want, h in cases:
            what = f"decode_step at {label}"
            got = expect_tensor(r, h, what, want.shape, want.dtype)
            tol = TOL[want.dtype]
            close_torch(got, want, atol=tol, rtol=tol, what="decode_step", on=label,
                        cause=f"(Compared with causal attention over the whole sequence, atol=rtol={tol:g}.)")

    return judge


# --- grouped_query_attention ------------------------------------------------------------------------------


def reference_gqa(q, k, v, causal, repeat="repeat_interleave", scale=None):
    n = q.shape[1] // k.shape[1]
    if repeat == "repeat_interleave":
        k, v = k.repeat_interleave(n, dim=1), v.repeat_interleave(n, dim=1)
    else:
        k, v = k.repeat(1, n, 1, 1), v.repeat(1, n, 1, 1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def gqa_cause(got, q, k, v, causal):
    H, G, d_k = q.shape[1], k.shape[1], q.shape[-1]
    tol = TOL[q.dtype]
    if 1 < G < H and same(got, reference_gqa(q, k, v, causal, repeat="repeat"), tol):
        return (f"Your query heads use the key/value heads {', '.join(str(h % G) for h in range(H))}, as repeat(...) "
                f"makes them: consecutive query heads share a head, "
                f"{', '.join(str(h // (H // G)) for h in range(H))}, as repeat_interleave(H // G, dim=1) makes them.")
    if same(got, reference_gqa(q, k, v, causal, scale=1.0), tol):
        return f"It matches attention without the scale: divide the scores by sqrt(d_k) = {root(d_k)}."
    if causal and same(got, reference_gqa(q, k, v, False), tol):
        return "It ignores the mask: with causal=True, query i may attend to keys j <= i only."
    return f"Query head h should attend with key/value head h // (H // G) = h // {H // G}."


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
        q, k = p.randn(B, H, T, dk, dtype=dtype), p.randn(B, G, T, dk, dtype=dtype)
        v = p.randn(B, G, T, dv, dtype=dtype)
        label = f"H = {H}, G = {G}, q of shape {(B, H, T, dk)}, {dtype}, causal={causal}"
        calls.append((label, q, k, v, causal,
                      p.call("recorded_ops", "grouped_query_attention", q, k, v, causal=causal)))

    def judge(r):
        for label, q, k, v, causal, h in calls:
            what = f"grouped_query_attention with {label}"
            got, ops = recorded(r, h, what)
            expect(not any("enable_gqa" in options for *_, options in ops),
                   f"{what} passes enable_gqa=True to F.scaled_dot_product_attention: share the key/value heads "
                   "yourself, then attend.")
            expect(_is_array(got), f"{what} should return a torch.Tensor; it does not.")
            got = as_tensor(got, what)
            shape = q.shape[:-1] + v.shape[-1:]
            expect(tuple(got.shape) == tuple(shape),
                   f"{what} should have shape {tuple(shape)}, but it has shape {tuple(got.shape)}.")
            expect(got.dtype == q.dtype, f"{what} should have the dtype of q, {q.dtype}; it has {got.dtype}.")
            tol = TOL[q.dtype]
            want = reference_gqa(q, k, v, causal)
            close_torch(got, want, atol=tol, rtol=tol, what="grouped_query_attention", on=label,
                        cause=f"(Compared with F.scaled_dot_product_attention(..., enable_gqa=True), "
                              f"atol=rtol={tol:g}.) "
                              + ("" if same(got, want, tol) else gqa_cause(got, q, k, v, causal)))

    return judge


def names_number(message, number):
    """True if a message writes the number on its own, not as part of a longer number or name (the notebook's)."""
    import re

    return re.search(rf"(?<![\w.]){number}(?!\w|\.\d)", str(message)) is not None


def test_grouped_query_attention_errors(p):
    calls = []
    for H, G, B, T, dk, dv in [(6, 4, 1, 3, 4, 4), (4, 3, 1, 3, 4, 4), (2, 4, 2, 4, 8, 5), (9, 6, 2, 4, 8, 5),
                               (8, 3, 2, 4, 8, 5), (5, 2, 2, 4, 8, 5), (7, 14, 2, 4, 8, 5)]:
        calls.append((H, G, p.call("grouped_query_attention", torch.zeros(B, H, T, dk), torch.zeros(B, G, T, dk),
                                   torch.zeros(B, G, T, dv))))

    def judge(r):
        for H, G, h in calls:
            what = f"{H} query heads and {G} key/value heads"
            error = r.raised(h)
            expect(error is not None, f"Expected a ValueError for {what}, but the call returned normally.")
            expect(error.is_a("ValueError"), f"Expected a ValueError for {what}, but got {error.type}: "
                                             f"{error.message[:200]}")
            missing = [str(n) for n in (H, G) if not names_number(error.message, n)]
            expect(not missing, f"The ValueError for {what} should name {' and '.join(missing)}; it says: "
                                f"{error.message[:200]}")

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
