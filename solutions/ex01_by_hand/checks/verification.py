"""The checks of ex01_by_hand (NumPy), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Each check also asks what its cell's visible
tests ask, on the public worked example. A failed check's message is what
the student reads in the feedback: which function, on what input, how far
off and the likely cause, never the expected numbers.
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
    expect(error is not None, f"{what} should raise ValueError, but it returned normally.")
    expect(error.is_a("ValueError"), f"{what} should raise ValueError, but it raised {error.type}: {error.message[:200]}")
    missing = [shape for shape in shapes if not names_shape(error.message, shape)]
    expect(not missing, f"{what} raised ValueError, but its message does not name the shape"
                        f"{'s' if len(missing) > 1 else ''} {' and '.join(map(str, missing))}. It says: "
                        f"{error.message[:200]}")


def expect_shape(name, got, shape):
    expect(got.shape == tuple(shape), f"{name} should have shape {tuple(shape)}, but it has shape {got.shape}.")


def test_scores_by_hand(p):
    ex = p.setup()
    reference = (ex["X"] @ ex["W_q"]) @ (ex["X"] @ ex["W_k"]).T
    h = p.get("scores_by_hand")

    def judge(r):
        got = r.ndarray(h, "scores_by_hand")
        expect_shape("scores_by_hand", got, (4, 4))
        expect(not np.array_equal(got, reference.T),
               "scores_by_hand is transposed: row i must hold query i against every key (S = Q K^T).")
        wrong = [(i, j) for i in range(4) for j in range(4) if got[i, j] != reference[i, j]]
        expect(not wrong, f"{len(wrong)} of 16 entries of scores_by_hand differ from the correct scores, at "
                          f"(row, column) {wrong}. Recompute those dot products q_i . k_j.")

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
        expect(np.allclose(Q[0], X[0] @ W_q), "Row 0 of project(X, W_q) should be X[0] @ W_q, the first token's "
                                              "features times the weight matrix.")
        expect_shape_error(r, h_visible_error, [(4, 6), (5, 3)], "project(X, W) with X (4, 6) and W (5, 3)")
        close_numpy(r.ndarray(h_random, "project(X, W)"), X2 @ W2, rtol=1e-10, atol=1e-12, what="project(X, W)",
                    on="a random (7, 5) input with a (5, 2) weight", cause="Each output row should be X[i] @ W.")
        close_numpy(r.ndarray(h_v, "project(X, W_v)"), X @ W_v, rtol=1e-10, atol=1e-12, what="project(X, W_v)",
                    on="the worked example")
        expect_shape_error(r, h_error, [(3, 4)], "project(X, W) with X and W both (3, 4): 4 features, 3 expected")

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
        expect(np.isclose(S[2, 1], Q[2] @ K[1]), "Entry [2, 1] of attention_scores(Q, K) should be the dot product "
                                                 "of query 2 with key 1, q_2 . k_1.")
        expect_shape("attention_scores with 2 queries and 5 keys", r.ndarray(h_rect, "attention_scores"), (2, 5))
        close_numpy(r.ndarray(h_1, "attention_scores"), Q1 @ K1.T, rtol=1e-10, atol=1e-12,
                    what="attention_scores(Q, K)", on="3 random queries and 6 random keys of width 4",
                    cause="Entry [i, j] should be the dot product of query i with key j.")
        got = r.ndarray(h_2, "attention_scores")
        close_numpy(got, Q2 @ K2.T, rtol=1e-10, atol=1e-12,
                    what="attention_scores(Q, K)", on="5 random queries and 5 random keys of width 2",
                    cause=("Row i should hold query i against every key (Q K^T, not K Q^T)."
                           if got.shape == (5, 5) and np.allclose(got, K2 @ Q2.T) else ""))

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
        expect(np.allclose(scaled, demo / 3.0), "scale_scores(S, 9) should divide every score by 3, the square "
                                                "root of 9.")
        for d_k, S, h in cases:
            close_numpy(r.ndarray(h, "scale_scores(S, d_k)"), S / np.sqrt(d_k), rtol=1e-12, atol=0,
                        what="scale_scores(S, d_k)", on=f"a random (3, 5) S with d_k = {d_k}",
                        cause="Every score should be divided by the square root of d_k.")

    return judge


STABLE = "If you exponentiate large numbers, subtract each row's maximum first."


def test_softmax(p):
    demo = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
    h_demo = p.call("softmax", demo, after=(0,))
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
        expect(np.array_equal(as_float_array(r.after(h_demo, 0), "S after softmax(S)"), demo),
               "softmax changed the scores it was given. The caller may still need them: compute S - max into a "
               "new array (shifted = S - m) instead of updating S in place (S -= m).")
        expect_shape("softmax(S) for S of shape (3, 3)", A, (3, 3))
        expect(np.all(np.isfinite(A)), f"softmax(S) contains inf or NaN on the visible example. {STABLE}")
        for i, total in enumerate(A.sum(axis=1)):
            expect(np.isclose(total, 1.0), f"Row {i} of softmax(S) sums to {total:.3g}, not 1. " + (
                "Its columns sum to 1: did you normalise over axis 0 (columns) instead of each row?"
                if np.allclose(A.sum(axis=0), 1.0) else
                "Each row should be divided by its own sum (axis=1, keepdims=True), not by the sum of the whole "
                "matrix."))
        expect(np.all(A > 0), "Every softmax weight should be strictly positive: e^s > 0 for every finite score s.")
        expect(np.allclose(A[1], A[1, 0]), "A row of equal scores should give equal weights.")
        big = r.ndarray(h_big, "softmax([[1000, 1001, 1002]])")
        expect(np.all(np.isfinite(big)), f"softmax([[1000, 1001, 1002]]) contains inf or NaN. {STABLE}")
        expect(big.shape == (1, 3) and np.allclose(big, r.ndarray(h_small, "softmax([[0, 1, 2]])")),
               "Adding the same constant to every score in a row must not change its softmax.")
        far = r.ndarray(h_far, "softmax of two rows far apart")
        expect(far.shape == (2, 3) and np.all(np.isfinite(far)) and np.allclose(far[0], far[1]),
               "softmax of two rows far apart, [0, 1, 2] and [1000, 1001, 1002], should give the same weights in "
               "both rows (only differences within a row matter); yours "
               + ("contain inf or NaN. " if not np.all(np.isfinite(far)) else "differ between the two rows. ")
               + "Subtract each row's own maximum (S.max(axis=1, keepdims=True)), not the maximum of the whole "
               "matrix: e^(0 - 1002) is 0, and 0 / 0 is NaN.")
        for name, S in cases.items():
            got = r.ndarray(handles[name], "softmax(S)")
            given = as_float_array(r.after(handles[name], 0), "S after softmax(S)")
            expect(np.array_equal(given, S), f"softmax changed the scores it was given ({name}). The caller may "
                                             "still need them: compute the shifted scores into a new array instead "
                                             "of updating S in place.")
            expect(got.shape == S.shape, f"softmax changed the shape for {name}: {S.shape} -> {got.shape}.")
            expect(np.all(np.isfinite(got)), f"softmax gave inf or NaN for {name}. {STABLE}")
            close_numpy(got, reference_softmax(S), rtol=1e-7, atol=1e-12, what="softmax(S)", on=name,
                        cause="Each row should be e^(S - row maximum), divided by the row's sum.")

    return judge


def likely_cause(A, X, W_q, W_k, W_v):
    """What the usual mistakes would give as weights: the one ``A`` matches, in words."""
    Q, K = X @ W_q, X @ W_k
    S = Q @ K.T
    variants = {
        "The weights match unscaled scores: divide by the square root of d_k.": S,
        "The weights match scores scaled by the square root of d_model: use d_k, the width of the keys.":
            S / np.sqrt(X.shape[1]),
        "The weights match scores scaled by the square root of d_v: use d_k, the width of the keys.":
            S / np.sqrt(W_v.shape[1]),
        "The weights match scores scaled by the square root of the number of tokens: use d_k, the width of the "
        "keys.": S / np.sqrt(X.shape[0]),
        "The weights match scores divided by d_k itself: divide by its square root.": S / Q.shape[1],
    }
    return next((text for text, scores in variants.items()
                 if A.shape == scores.shape and np.allclose(A, reference_softmax(scores))), "")


def check_attention(Z, A, args, on, atol_z=1e-10):
    """Z and A of self_attention(*args) against the reference, naming a likely cause."""
    Z_ref, A_ref = reference_attention(*args)
    close_numpy(A, A_ref, rtol=1e-7, atol=1e-10, what="A", on=on, cause=likely_cause(A, *args))
    V = args[0] @ args[3]
    transposed = Z.shape == Z_ref.shape and A.shape == (len(V), len(V)) and np.allclose(Z, A.T @ V)
    close_numpy(Z, Z_ref, rtol=1e-7, atol=atol_z, what="Z", on=on,
                cause="Z looks like A.T @ V: use Z = A @ V." if transposed else "")


def test_self_attention(p):
    ex = p.setup()
    example = (ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    h_example = p.call("self_attention", *example)
    rng = p.rng
    cases = []
    for T, d, d_k, d_v in [(5, 8, 4, 2), (3, 4, 6, 5), (7, 10, 2, 3)]:
        args = (rng.normal(size=(T, d)), rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k)),
                rng.normal(size=(d, d_v)))
        cases.append((f"random inputs with T={T}, d_model={d}, d_k={d_k}, d_v={d_v}", args, (T, d_v),
                      p.call("self_attention", *args)))
    large = (rng.normal(size=(4, 6)) * 30, rng.normal(size=(6, 3)) * 3, rng.normal(size=(6, 3)) * 3,
             rng.normal(size=(6, 3)))
    h_large = p.call("self_attention", *large)

    def judge(r):
        Z, A = (as_float_array(v, "self_attention") for v in r.pair(h_example, "self_attention(X, W_q, W_k, W_v)"))
        expect_shape("Z", Z, (4, 3))
        expect_shape("A", A, (4, 4))
        expect(np.all(np.isfinite(A)), "A contains inf or NaN on the worked example: is your softmax stable?")
        expect(np.allclose(A.sum(axis=1), 1.0), "Each row of A should sum to 1 on the worked example: apply the "
                                                "softmax to each row of the scores.")
        check_attention(Z, A, example, "the worked example")
        for label, args, z_shape, h in cases:
            Z, A = (as_float_array(v, "self_attention") for v in r.pair(h, f"self_attention on {label}"))
            expect(Z.shape == z_shape, f"Z has shape {Z.shape} for {label}; it should be {z_shape}.")
            check_attention(Z, A, args, label)
        Z, A = (as_float_array(v, "self_attention") for v in r.pair(h_large, "self_attention with large scores"))
        expect(np.all(np.isfinite(Z)), "Z contains inf or NaN when the scores are large: is your softmax stable?")
        check_attention(Z, A, large, "random (4, 6) inputs whose scores reach the thousands", atol_z=1e-9)

    return judge


CHECKS = {
    "test_scores_by_hand": test_scores_by_hand,
    "test_project": test_project,
    "test_attention_scores": test_attention_scores,
    "test_scale_scores": test_scale_scores,
    "test_softmax": test_softmax,
    "test_self_attention": test_self_attention,
}
