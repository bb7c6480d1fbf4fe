"""The checks of ex01_by_hand (NumPy), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/assignments/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verification/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Each check also asks what its cell's visible
tests ask, on the public example. A failed check's message is what the
student reads in the feedback: which answer, on what input, how far off and
the likely cause, never the expected numbers.
"""


import numpy as np

from tools.verification.probes import as_float_array, close_numpy, diagnosis, expect

# The likely mistakes these checks name, by code: what the mistake is, and the chapter section that teaches it
# (the instructor's report, instructor/report.md). The codes every check may report are in probes.GENERAL_CAUSES.
CAUSES = {
    "scores_transposed": ("the score matrix written as K Q^T: row i holds key i against every query",
                          "ch01_attention_by_hand: Two layouts: worksheets and PyTorch"),
    "score_slip": ("one or two dot products of the hand-computed scores miscomputed",
                   "ch01_attention_by_hand: Step 2: scores are dot products"),
    "scores_of_other_inputs": ("most hand-computed scores wrong: the scores of other queries and keys "
                               "(chapter 1's sentence, for one) than this exercise's",
                               "ch01_attention_by_hand: Step 1: queries, keys and values"),
    "rows_swapped": ("the scaled and the unscaled row of weights in each other's place",
                     "ch01_attention_by_hand: Step 3: scaling by √dₖ"),
    "pencil_shortcuts": ("weights worked with the pencil shortcuts (3 for e, ⌊S/2⌋), too coarse here",
                         "ch01_attention_by_hand: Pencil-and-paper shortcuts, and what they cost"),
    "d_k_for_sqrt": ("d_k used where the scaling is by its square root √d_k",
                     "ch01_attention_by_hand: Step 3: scaling by √dₖ"),
    "key_column": ("the column of a key (every query's score for it) taken for the row of a query",
                   "ch01_attention_by_hand: Step 4: softmax turns scores into weights"),
    "modifies_input": ("changes the weights it was given in place",
                       "ch01_attention_by_hand: Step 4: softmax turns scores into weights"),
    "overflow": ("works through ratios or powers of weights, which leave float64's range where a logarithm "
                 "of each weight would not", "ch03_scaling: What large scores do to the softmax"),
    "scaling_not_undone": ("the gaps of the scaled scores: the division by √d_k not undone",
                           "ch01_attention_by_hand: Step 3: scaling by √dₖ"),
    "scaled_twice": ("divides by √d_k again instead of multiplying by it",
                     "ch01_attention_by_hand: Step 3: scaling by √dₖ"),
    "log10": ("base-10 logarithms of weights the softmax made with e^x",
              "ch01_attention_by_hand: Step 4: softmax turns scores into weights"),
    "gaps_from_max": ("gaps measured from each row's largest score instead of its first key",
                      "ch01_attention_by_hand: Step 4: softmax turns scores into weights"),
    "no_keepdims": ("a row's first weight taken without keeping it a column, so it divides across columns",
                    "ch01_attention_by_hand: Step 4: softmax turns scores into weights"),
    "rounded": ("results rounded to a few decimals, as if every score had no more",
                "ch01_attention_by_hand: Step 4: softmax turns scores into weights"),
}


def reference_softmax(S):
    S = np.asarray(S, dtype=float)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def expect_shape(name, got, shape):
    expect(got.shape == tuple(shape), f"{name} should have shape {tuple(shape)}, but it has shape {got.shape}.")


def test_scores_by_hand(p):
    ex = p.setup()
    reference = (ex["X"] @ ex["W_q"]) @ (ex["X"] @ ex["W_k"]).T
    h = p.get("scores_by_hand")

    def judge(r):
        got = as_float_array(r.value(h, "scores_by_hand"), "scores_by_hand")
        expect_shape("scores_by_hand", got, (4, 4))
        expect(not np.array_equal(got, reference.T),
               "scores_by_hand is transposed: row i must hold query i against every key (S = Q K^T).",
               cause="scores_transposed")
        wrong = [(i, j) for i in range(4) for j in range(4) if got[i, j] != reference[i, j]]
        expect(not wrong, f"{len(wrong)} of 16 entries of scores_by_hand differ from the correct scores, at "
                          f"(row, column) {wrong}. Recompute those dot products q_i . k_j, from the queries and "
                          "keys of this exercise's X.",
               cause="score_slip" if len(wrong) <= 2 else "scores_of_other_inputs")

    return judge


def test_weights_by_hand(p):
    ex = p.setup()
    S = (ex["X"] @ ex["W_q"]) @ (ex["X"] @ ex["W_k"]).T
    d_k = ex["W_k"].shape[1]
    row = S[3]
    reference = np.stack([reference_softmax(row), reference_softmax(row / np.sqrt(d_k))])   # (2, 4)
    # What the usual slips give, to name the likely cause.
    slips = {
        ("pencil_shortcuts",
         "the row computed with the chapter's shortcuts (3 for e, or ⌊S/2⌋): they are not accurate enough here"):
            [reference_softmax(np.floor(row / 2) * np.log(3)), reference_softmax(row / 2 * np.log(3)),
             reference_softmax(np.floor(row / 2))],
        ("d_k_for_sqrt", "scores divided by d_k = 3 rather than by its square root"): [reference_softmax(row / d_k)],
        ("key_column",
         "the column of key “soup” (the scores every query gives it) rather than the row of query “soup”"):
            [reference_softmax(S[:, 3]), reference_softmax(S[:, 3] / np.sqrt(d_k))],
    }
    h = p.get("weights_by_hand")

    def judge(r):
        got = as_float_array(r.value(h, "weights_by_hand"), "weights_by_hand")
        expect_shape("weights_by_hand", got, (2, 4))
        expect(np.all(np.isfinite(got)), "weights_by_hand contains inf or NaN.")
        expect(not np.allclose(got, reference[::-1], atol=0.002),
               "The two rows of weights_by_hand are swapped: row 0 is the one without scaling, row 1 the one with.",
               cause="rows_swapped")
        for i, label in enumerate(["without scaling", "with scaling"]):
            off = np.abs(got[i] - reference[i])
            if np.all(off <= 0.002):
                continue
            cause = next((diagnosis(code, f" They look like {text}.") for (code, text), rows in slips.items()
                          if any(np.allclose(got[i], w, atol=0.002) for w in rows)), "")
            expect(False, f"Row {i} of weights_by_hand ({label}) is off by more than 0.002 at keys "
                          f"{[int(j) for j in np.flatnonzero(off > 0.002)]} (largest difference {off.max():.3f})."
                          f"{cause} Check the row of scores of “soup” first, then subtract its largest score, "
                          "exponentiate, and divide by the sum.")

    return judge


def test_score_gaps(p):
    rng = p.rng

    def case(T_q, T_k, d_k, spread):
        S = np.round(rng.normal(size=(T_q, T_k)) * spread, 3)
        return S, reference_softmax(S / np.sqrt(d_k))

    visible = [(np.array([[0.0, 1.5, -2.0], [4.0, 4.0, 1.0], [2.0, -3.0, 0.5]]), 9, "a (3, 3) example with d_k = 9"),
               (np.array([[1.0, -1.0, 2.5, 0.0, 3.0], [0.0, 2.0, 2.0, -1.0, 1.0]]), 2,
                "a (2, 5) example with d_k = 2")]
    cases = [(S, d_k, reference_softmax(S / np.sqrt(d_k)), label) for S, d_k, label in visible]
    for T_q, T_k, d_k, spread, label in [(4, 4, 3, 2.0, "a random (4, 4) example with d_k = 3"),
                                         (5, 3, 7, 3.0, "a random (5, 3) example with d_k = 7"),
                                         (3, 8, 64, 20.0, "a random (3, 8) example with d_k = 64"),
                                         (6, 6, 1, 1.5, "a random (6, 6) example with d_k = 1"),
                                         (4, 1, 5, 1.0, "a single key, (4, 1), with d_k = 5")]:
        S, A = case(T_q, T_k, d_k, spread)
        cases.append((S, d_k, A, label))
    # Raw scores hundreds apart: the smallest weights come near 1e-250, still far from float64's underflow.
    far = np.round(rng.uniform(-1.0, 1.0, size=(3, 6)) * 480.0, 2)
    far[:, 0] = np.round(rng.uniform(-300.0, 300.0, size=3), 2)
    cases.append((far, 4, reference_softmax(far / 2.0), "raw scores hundreds apart (weights far below 1e-100), d_k = 4"))
    # With d_k = 64 a ratio of two weights raised to the power √d_k = 8 leaves float64's range.
    wide = np.round(rng.uniform(-400.0, 400.0, size=(2, 7)), 2)
    wide[:, 0] = np.round(rng.uniform(-390.0, -370.0, size=2), 2)   # the first key far below another:
    wide[:, 1] = np.round(rng.uniform(370.0, 390.0, size=2), 2)     # a raw gap above 709 = ln(float64's max)
    cases.append((wide, 64, reference_softmax(wide / 8.0), "raw scores hundreds apart with d_k = 64"))
    # Weights below float64's smallest normal number (2.2e-308): a raw gap of 710 to 713 with d_k = 1 gives a
    # weight near 1e-309 (still known to about 1e-14 of itself), and a ratio of two weights beyond float64's
    # largest number, e^709.8. Row 0: the first key is the tiny one; row 1: the first key is the largest and
    # another one tiny; row 2: both.
    tiny = np.round(rng.uniform(-5.0, 5.0, size=(3, 5)), 2)
    tiny[0, 0] = tiny[0].max() - round(float(rng.uniform(710.0, 713.0)), 2)
    tiny[1, 0] = tiny[1].max() + 1.0
    tiny[1, 3] = tiny[1, 0] - round(float(rng.uniform(710.0, 713.0)), 2)
    tiny[2, 0] = tiny[2].max() - round(float(rng.uniform(710.0, 713.0)), 2)
    tiny[2, 4] = tiny[2, 0] - 0.5
    cases.append((tiny, 1, reference_softmax(tiny), "raw scores 710 to 713 apart with d_k = 1 (weights near 1e-309)"))
    # Scores to every digit float64 keeps, not rounded to a few decimals.
    for T_q, T_k, d_k, spread in [(4, 6, 5, 3.0), (3, 3, 16, 40.0)]:
        S = rng.normal(size=(T_q, T_k)) * spread
        cases.append((S, d_k, reference_softmax(S / np.sqrt(d_k)),
                      f"a random ({T_q}, {T_k}) example with d_k = {d_k}, scores not rounded"))
    handles = [p.call("score_gaps", A, d_k, after=(0,)) for S, d_k, A, label in cases]

    def judge(r):
        for (S, d_k, A, label), h in zip(cases, handles):
            G = as_float_array(r.value(h, f"score_gaps on {label}"), "score_gaps")
            expect(np.array_equal(as_float_array(r.after(h, 0), "A after score_gaps(A, d_k)"), A),
                   f"score_gaps changed the weights it was given ({label}): work on a new array.",
                   cause="modifies_input")
            expect_shape(f"score_gaps on {label}", G, A.shape)
            expect(np.all(np.isfinite(G)), f"score_gaps gave inf or NaN on {label}. Every weight is positive, so "
                                           "its logarithm is finite: take the logarithm of each weight, not of a "
                                           "ratio of weights (which overflows when one weight is below about "
                                           "1e-308), a difference or an exponential.",
                   cause="overflow")
            wanted = S - S[:, :1]
            causes = {
                np.sqrt(d_k): ("d_k_for_sqrt", "Did you multiply by d_k instead of its square root?"),
                1 / np.sqrt(d_k): ("scaling_not_undone",
                                   "These are the gaps of the scaled scores: undo the scaling, multiply by √d_k."),
                1 / d_k: ("scaled_twice", "Did you divide by √d_k instead of multiplying?"),
                1 / np.log(10): ("log10", "Did you take np.log10? The softmax's exponential is e^x."),
            }
            cause = "" if d_k == 1 else next(
                (diagnosis(*named) for f, named in causes.items() if np.allclose(G, wanted * f, atol=1e-6)), "")
            if not cause and np.allclose(G, S - S.max(axis=1, keepdims=True), atol=1e-6):
                cause = diagnosis("gaps_from_max", "The gaps are measured from each row's largest score; measure "
                                                   "them from the row's first key.")
            if not cause and A.shape[0] == A.shape[1] and A.shape[0] > 1:
                with np.errstate(all="ignore"):
                    across = np.log(A / A[:, 0]) * np.sqrt(d_k)   # row j's first weight divides column j
                if np.allclose(G, across, atol=1e-6):
                    cause = diagnosis("no_keepdims", "Each row's first weight must divide its own row: keep it a "
                                                     "column (keepdims=True, or A[:, :1]).")
            if (not cause and np.allclose(G, np.round(wanted, 3), rtol=0, atol=1e-9)
                    and not np.allclose(G, wanted, rtol=0, atol=1e-9)):
                cause = diagnosis("rounded", "Are the gaps rounded? Scores may have more decimals than the examples'.")
            close_numpy(G, wanted, rtol=1e-7, atol=1e-7 * max(1.0, float(np.abs(wanted).max())),
                        what="score_gaps(A, d_k)", on=label, cause=cause)

    return judge


CHECKS = {
    "test_scores_by_hand": test_scores_by_hand,
    "test_weights_by_hand": test_weights_by_hand,
    "test_score_gaps": test_score_gaps,
}
