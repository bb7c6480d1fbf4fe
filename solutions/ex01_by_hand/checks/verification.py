"""Verification of ex01_by_hand (NumPy): one check per graded test cell.

Each check asks what its test cell asks — the visible checks on the public
worked example, the hidden ones on inputs of the same kinds and sizes — but
draws the random inputs afresh for every run. Comparisons use the hidden
tests' own functions and tolerances (``numpy.testing.assert_allclose``), here
in the grader's process.
"""


import numpy as np

from tools.verification.probes import as_float_array, close_numpy, expect, names_shape


def reference_softmax(S):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    A = reference_softmax(Q @ K.T / np.sqrt(Q.shape[1]))
    return A @ V, A


def expect_shape_error(r, handle, shapes, what):
    """A ValueError whose message names every shape of ``shapes`` (the notebook's rule)."""
    error = r.raised(handle)
    expect(error is not None, f"{what} returned instead of raising ValueError")
    expect(error.is_a("ValueError"), f"{what} raised {error.type}, not ValueError")
    expect(all(names_shape(error.message, shape) for shape in shapes),
           f"the ValueError of {what} does not name the shapes {shapes}: {error.message[:200]!r}")


def expect_shape(name, got, shape):
    expect(got.shape == tuple(shape), f"{name} has shape {got.shape}, expected {tuple(shape)}")


def test_scores_by_hand(p):
    ex = p.setup()
    reference = (ex["X"] @ ex["W_q"]) @ (ex["X"] @ ex["W_k"]).T
    h = p.get("scores_by_hand")

    def judge(r):
        got = r.ndarray(h, "scores_by_hand")
        expect_shape("scores_by_hand", got, (4, 4))
        wrong = [(i, j) for i in range(4) for j in range(4) if got[i, j] != reference[i, j]]
        expect(not wrong, f"scores_by_hand differs from Q K^T at {len(wrong)} of 16 entries, e.g. {wrong[:3]}")

    return judge


def test_project(p):
    ex = p.setup()
    X, W_q, W_v = ex["X"], ex["W_q"], ex["W_v"]
    X2, W2 = p.rng.normal(size=(7, 5)), p.rng.normal(size=(5, 2))
    # Error messages are checked on the hidden tests' shapes: a message that
    # names the shapes names them whatever they are.
    bad_X, bad_W = p.rng.normal(size=(3, 4)), p.rng.normal(size=(3, 4))
    h_q = p.call("project", X, W_q)
    h_random = p.call("project", X2, W2)
    h_v = p.call("project", X, W_v)
    h_visible_error = p.call("project", X, np.ones((5, 3)))
    h_error = p.call("project", bad_X, bad_W)

    def judge(r):
        Q = r.ndarray(h_q, "project(X, W_q)")
        expect_shape("project(X, W_q)", Q, (4, 3))
        expect(np.allclose(Q[0], X[0] @ W_q), "row 0 of project(X, W_q) is not X[0] @ W_q")
        expect_shape_error(r, h_visible_error, [(4, 6), (5, 3)], "project(X, W) with X (4, 6) and W (5, 3)")
        close_numpy(r.ndarray(h_random, "project"), X2 @ W2, rtol=1e-10, atol=1e-12,
                    what="project on a random (7, 5) input with a (5, 2) weight")
        close_numpy(r.ndarray(h_v, "project(X, W_v)"), X @ W_v, rtol=1e-10, atol=1e-12, what="project(X, W_v)")
        expect_shape_error(r, h_error, [(3, 4)], "project with X and W both (3, 4)")

    return judge


def test_attention_scores(p):
    ex = p.setup()
    Q, K = ex["X"] @ ex["W_q"], ex["X"] @ ex["W_k"]
    Q1, K1 = p.rng.normal(size=(3, 4)), p.rng.normal(size=(6, 4))
    Q2, K2 = p.rng.normal(size=(5, 2)), p.rng.normal(size=(5, 2))
    h_example = p.call("attention_scores", Q, K)
    h_rect = p.call("attention_scores", np.ones((2, 3)), np.ones((5, 3)))
    h_1 = p.call("attention_scores", Q1, K1)
    h_2 = p.call("attention_scores", Q2, K2)

    def judge(r):
        S = r.ndarray(h_example, "attention_scores(Q, K)")
        expect_shape("attention_scores(Q, K)", S, (4, 4))
        expect(np.isclose(S[2, 1], Q[2] @ K[1]), "entry [2, 1] of attention_scores(Q, K) is not q_2 . k_1")
        expect_shape("attention_scores with 2 queries and 5 keys", r.ndarray(h_rect, "attention_scores"), (2, 5))
        close_numpy(r.ndarray(h_1, "attention_scores"), Q1 @ K1.T, rtol=1e-10, atol=1e-12,
                    what="attention_scores for 3 queries and 6 keys of width 4")
        close_numpy(r.ndarray(h_2, "attention_scores"), Q2 @ K2.T, rtol=1e-10, atol=1e-12,
                    what="attention_scores on a random (5, 2) example")

    return judge


def test_scale_scores(p):
    demo = np.array([[6.0, -3.0, 0.0], [1.5, 9.0, 12.0]])
    h_visible = p.call("scale_scores", demo, 9)
    cases = []
    for d_k in (1, *sorted(int(n) for n in p.rng.choice(np.arange(2, 100), size=3, replace=False))):
        S = p.rng.normal(size=(3, 5))
        cases.append((d_k, S, p.call("scale_scores", S, d_k)))

    def judge(r):
        scaled = r.ndarray(h_visible, "scale_scores(S, 9)")
        expect_shape("scale_scores(S, 9)", scaled, (2, 3))
        expect(np.allclose(scaled, demo / 3.0), "scale_scores(S, 9) does not divide the scores by 3")
        for d_k, S, h in cases:
            close_numpy(r.ndarray(h, "scale_scores"), S / np.sqrt(d_k), rtol=1e-12, atol=0,
                        what=f"scale_scores for d_k = {d_k}")

    return judge


def test_softmax(p):
    demo = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
    h_demo = p.call("softmax", demo)
    h_big = p.call("softmax", np.array([[1000.0, 1001.0, 1002.0]]))
    h_small = p.call("softmax", np.array([[0.0, 1.0, 2.0]]))
    h_far = p.call("softmax", np.array([[0.0, 1.0, 2.0], [1000.0, 1001.0, 1002.0]]))
    rng = p.rng
    cases = {
        "a random (4, 4) matrix": rng.normal(size=(4, 4)),
        "a non-square (3, 7) matrix": rng.normal(size=(3, 7)) * 3,
        "a (5, 2) matrix": rng.normal(size=(5, 2)),
        "scores around +800": rng.normal(size=(3, 5)) + 800.0,
        "scores around -800": rng.normal(size=(3, 5)) - 800.0,
        "scores spread over thousands": rng.normal(size=(4, 6)) * 2000.0,
        "a single row": rng.normal(size=(1, 6)),
        "a single column": rng.normal(size=(4, 1)),
    }
    handles = {name: p.call("softmax", S, after=(0,)) for name, S in cases.items()}

    def judge(r):
        A = r.ndarray(h_demo, "softmax(S) on the visible example")
        expect_shape("softmax(S) for S of shape (3, 3)", A, (3, 3))
        expect(np.all(np.isfinite(A)), "softmax(S) contains inf or NaN on the visible example")
        expect(np.allclose(A.sum(axis=1), 1.0), "the rows of softmax(S) do not sum to 1 on the visible example")
        expect(np.all(A > 0), "softmax(S) has weights that are not strictly positive")
        expect(np.allclose(A[1], A[1, 0]), "a row of equal scores does not give equal weights")
        big = r.ndarray(h_big, "softmax([[1000, 1001, 1002]])")
        expect(np.all(np.isfinite(big)), "softmax([[1000, 1001, 1002]]) is not finite")
        expect(big.shape == (1, 3) and np.allclose(big, r.ndarray(h_small, "softmax([[0, 1, 2]])")),
               "adding a constant to a row changes its softmax")
        far = r.ndarray(h_far, "softmax of two rows far apart")
        expect(far.shape == (2, 3) and np.all(np.isfinite(far)) and np.allclose(far[0], far[1]),
               "softmax of the rows [0, 1, 2] and [1000, 1001, 1002] does not give the same weights in both")
        for name, S in cases.items():
            got = r.ndarray(handles[name], f"softmax for {name}")
            given = as_float_array(r.after(handles[name], 0), f"S after softmax for {name}")
            expect(np.array_equal(given, S), f"softmax changed its input S ({name})")
            expect(got.shape == S.shape, f"softmax changed the shape for {name}: {S.shape} -> {got.shape}")
            expect(np.all(np.isfinite(got)), f"softmax gave inf or NaN for {name}")
            close_numpy(got, reference_softmax(S), rtol=1e-7, atol=1e-12, what=f"softmax for {name}")

    return judge


def test_self_attention(p):
    ex = p.setup()
    example = (ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    h_example = p.call("self_attention", *example)
    rng = p.rng
    cases = []
    for T, d, d_k, d_v in [(5, 8, 4, 2), (3, 4, 6, 5), (7, 10, 2, 3)]:
        args = (rng.normal(size=(T, d)), rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k)),
                rng.normal(size=(d, d_v)))
        cases.append((f"T={T}, d_model={d}, d_k={d_k}, d_v={d_v}", args, (T, d_v), p.call("self_attention", *args)))
    large = (rng.normal(size=(4, 6)) * 30, rng.normal(size=(6, 3)) * 3, rng.normal(size=(6, 3)) * 3,
             rng.normal(size=(6, 3)))
    h_large = p.call("self_attention", *large)

    def judge(r):
        Z, A = (as_float_array(v, "self_attention") for v in r.pair(h_example, "self_attention(X, W_q, W_k, W_v)"))
        expect_shape("Z", Z, (4, 3))
        expect_shape("A", A, (4, 4))
        expect(np.all(np.isfinite(A)), "A contains inf or NaN on the worked example")
        expect(np.allclose(A.sum(axis=1), 1.0), "the rows of A do not sum to 1 on the worked example")
        Z_ref, A_ref = reference_attention(*example)
        close_numpy(A, A_ref, rtol=1e-7, atol=1e-10, what="A on the worked example")
        close_numpy(Z, Z_ref, rtol=1e-7, atol=1e-10, what="Z on the worked example")
        for label, args, z_shape, h in cases:
            Z, A = (as_float_array(v, "self_attention") for v in r.pair(h, f"self_attention for {label}"))
            expect(Z.shape == z_shape, f"Z has shape {Z.shape} for {label}; expected {z_shape}")
            Z_ref, A_ref = reference_attention(*args)
            close_numpy(A, A_ref, rtol=1e-7, atol=1e-10, what=f"A for {label}")
            close_numpy(Z, Z_ref, rtol=1e-7, atol=1e-10, what=f"Z for {label}")
        Z, _ = (as_float_array(v, "self_attention") for v in r.pair(h_large, "self_attention with large scores"))
        expect(np.all(np.isfinite(Z)), "Z contains inf or NaN when the scores are large")
        close_numpy(Z, reference_attention(*large)[0], rtol=1e-7, atol=1e-9, what="Z when the scores are large")

    return judge


CHECKS = {
    "test_scores_by_hand": test_scores_by_hand,
    "test_project": test_project,
    "test_attention_scores": test_attention_scores,
    "test_scale_scores": test_scale_scores,
    "test_softmax": test_softmax,
    "test_self_attention": test_self_attention,
}
