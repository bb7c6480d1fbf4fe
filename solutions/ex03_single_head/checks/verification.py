"""The checks of ex03_single_head (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run. Functions are called on inputs of the hidden
tests' shapes. Classes are instantiated where the student's code runs, which
reports their structure (layers, parameter names, buffers, dropout rates) as
built-in types; the check then copies its own weights into the named layers
(``W_q``, ``W_k``, ``W_v``, ``qkv``) and compares the outputs with PyTorch's
attention computed with the same weights, at the hidden tests' tolerances.
Error messages are checked on the hidden tests' own bad inputs. A failed
check's message is what the student reads in the feedback: which function,
on what input, how far off and the likely cause, never the expected values.
"""

import ast
import math
import re

import torch
import torch.nn.functional as F

from tools.verification.probes import Fail, close_torch, effective_params, expect, names_shape


def attention_reference(q, k, v, mask=None):
    """PyTorch's output, and its weights (the output when the values are the identity); a query with no
    allowed key gets zeros, set here, as the hidden tests do (PyTorch's result there depends on its version)."""
    eye = torch.eye(k.shape[-2], dtype=q.dtype).expand(*q.shape[:-2], k.shape[-2], k.shape[-2])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)
        out, weights = torch.where(has_key, out, 0.0), torch.where(has_key, weights, 0.0)
    return out, weights


def masked_weights(scores, mask, dim=-1):
    """softmax of the scores over ``dim`` with -inf where the mask is False; rows with no allowed key zero."""
    if mask is None:
        return torch.softmax(scores, dim=dim)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim)
    return torch.nan_to_num(weights, nan=0.0)


def matches(got, candidate):
    return (candidate is not None and tuple(got.shape) == tuple(candidate.shape)
            and bool(torch.allclose(got.double(), candidate.double(), atol=1e-4, rtol=1e-3, equal_nan=True)))


def weights_cause(got, q, k, mask, scale_name="sqrt(d_k)", widths=()):
    """The usual mistakes' weights, and the one ``got`` matches, in words. ``widths`` lists other
    (name, width) pairs a student may have scaled by instead of d_k."""
    if not bool(torch.isfinite(got).all()):
        if mask is not None and bool(torch.isnan(got).any()):
            empty = ~mask.expand(got.shape).any(dim=-1)
            if bool(empty.any()) and not bool(torch.isnan(got[~empty]).any()):
                return ("The NaN are in the rows of queries with no allowed key: the softmax of a row of -inf is "
                        "0/0. Set such rows to zero with torch.where, which selects (multiplying by 0 keeps the NaN).")
        return "The softmax must not overflow: take torch.softmax, or subtract each row's maximum first."
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    candidates = [
        ("They match unscaled scores q k^T: divide them by " + scale_name + ".", masked_weights(scores, mask)),
        ("They match scores divided by d_k itself: divide by its square root.",
         masked_weights(scores / d_k, mask) if d_k != 1 else None),
    ]
    for name, width in widths:
        if width != d_k:
            candidates.append((f"They match scores divided by the square root of {name}: scale by {scale_name}, "
                               "the width of the queries and keys.", masked_weights(scores / math.sqrt(width), mask)))
    if d_k != 4:
        candidates.append(("They match scores divided by 2 whatever the width: compute the scale from q.shape[-1].",
                           masked_weights(scores / 2, mask)))
    scaled = scores / math.sqrt(d_k)
    candidates.append(("Its columns sum to 1: the softmax ran over the queries. Take it over the keys, the last "
                       "dimension (dim=-1).", masked_weights(scaled, mask, dim=-2)))
    if tuple(k.shape[-2:-1]) == tuple(q.shape[-2:-1]):
        candidates.append(("They are the weights of the scores k q^T: are the queries and keys swapped?",
                           masked_weights(k @ q.transpose(-2, -1) / math.sqrt(d_k), mask)))
    if mask is not None:
        full = mask.expand(got.shape)
        candidates += [
            ("They are zero exactly where the mask is True: the mask is read the wrong way round. True means 'may "
             "attend', so fill the scores where the mask is False (~mask) with -inf.", masked_weights(scaled, ~full)),
            ("No row sums to more than 1, as when the weights are set to zero after the softmax. Fill the forbidden "
             "scores with -inf before the softmax, so that each row shares 1 among its allowed keys.",
             torch.softmax(scaled, dim=-1) * full),
            ("Forbidden keys keep a weight: fill their scores with -inf, not 0 (a score of 0 is an ordinary score).",
             torch.softmax(scaled.masked_fill(~full, 0.0), dim=-1)),
            ("A query with no allowed key got equal weights on every key, as with a fill of -1e9: its weights and "
             "output should be all zeros. Fill with -inf, then set such rows to zero.",
             torch.softmax(scaled.masked_fill(~full, -1e9), dim=-1)),
            ("Every key is allowed in them: pass the mask on to scaled_dot_product_attention.",
             masked_weights(scaled, None)),
        ]
    return next((text for text, candidate in candidates if matches(got, candidate)), "")


def expect_value_error(r, handle, what, shapes=(), mentions=(), alone=(), hint=""):
    """The probe raised a ValueError whose message names every shape of ``shapes`` (by the notebooks'
    rule), contains every text of ``mentions`` and writes every number of ``alone`` as a number of its own."""
    error = r.raised(handle)
    expect(error is not None, f"{what} should raise ValueError, but it returned normally. {hint}".rstrip())
    expect(error.is_a("ValueError"),
           f"{what} should raise ValueError, but it raised {error.type}: {error.message[:200]}. {hint}".rstrip())
    missing = [str(tuple(s)) for s in shapes if not names_shape(error.message, s)]
    missing += [m for m in mentions if m not in error.message]
    missing += [str(n) for n in alone if not re.search(rf"(?<![\w.]){n}(?!\w|\.\d)", error.message)]
    expect(not missing, f"{what} raised ValueError, but its message should name {' and '.join(missing)}. It says: "
                        f"{error.message[:200]}")


def module_reference(params, x, mask=None):
    q, k, v = (F.linear(x, params[f"{n}.weight"], params.get(f"{n}.bias")) for n in ("W_q", "W_k", "W_v"))
    return attention_reference(q, k, v, mask)


def causal_reference(x, weight, bias, d_out):
    q, k, v = F.linear(x, weight, bias).split(d_out, dim=-1)
    T = x.shape[-2]
    eye = torch.eye(T, dtype=x.dtype).expand(*x.shape[:-2], T, T)
    return (F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, eye, is_causal=True), v)


def causal_cause(got, x, weight, bias, d_out):
    """The usual mistakes of CausalSelfAttention's weights, and the one ``got`` matches, in words."""
    if not bool(torch.isfinite(got).all()):
        return ("Under a causal mask every query may attend at least to itself, so no row should be NaN: is the mask "
                "the right way round (True = may attend)?")
    q, k, _ = F.linear(x, weight, bias).split(d_out, dim=-1)
    T = x.shape[-2]
    past = torch.ones(T, T, dtype=torch.bool).tril()
    candidates = [
        ("They match queries and keys taken the other way round: split the output of qkv as queries, keys, values, "
         "in that order.", masked_weights(k @ q.transpose(-2, -1) / math.sqrt(d_out), past)),
        (f"They match scores divided by sqrt({3 * d_out}), the width of the fused output 3 * d_out: divide by "
         "sqrt(d_k), where d_k = d_out is the width of one of q, k, v.",
         masked_weights(q @ k.transpose(-2, -1) / math.sqrt(3 * d_out), past)),
        ("They match unscaled scores: divide by sqrt(d_k), with d_k = d_out.",
         masked_weights(q @ k.transpose(-2, -1), past)),
        ("A query gives no weight to its own token: the mask should allow the diagonal (torch.tril keeps it).",
         masked_weights(q @ k.transpose(-2, -1) / math.sqrt(d_out), past.tril(diagonal=-1))),
    ]
    return next((text for text, candidate in candidates if matches(got, candidate)),
                "Split qkv(x) into queries, keys and values, in that order, mask the keys after each query, and "
                "divide the scores by sqrt(d_out).")


def close(got, ref, *, atol, rtol, what, on, cause):
    """close_torch, with the likely cause (a function: it is worked out only when the values are off)."""
    try:
        close_torch(got, ref, atol=atol, rtol=rtol, what=what, on=on)
    except Fail:
        close_torch(got, ref, atol=atol, rtol=rtol, what=what, on=on, cause=cause())


def linear_weights(p, d_in, d_out, bias):
    """A weight (and bias) as nn.Linear would draw them, from this run's generator."""
    bound = 1 / math.sqrt(d_in)
    weight = (torch.rand(d_out, d_in, generator=p.gen) * 2 - 1) * bound
    return weight, ((torch.rand(d_out, generator=p.gen) * 2 - 1) * bound if bias else None)


def expect_rows_sum_to_one(weights, what, atol=1e-5):
    """Each row (one query, over the keys) sums to 1; the message names a cause only when the sums show it."""
    expect(not bool(torch.isnan(weights).any()),
           f"{what} contains NaN, which is what the softmax gives for a row whose scores are all -inf (0/0).")
    sums = weights.sum(dim=-1)
    worst = (sums - 1).abs().max().item()
    if worst <= atol:
        return
    expect(not bool(torch.any(sums == 0)), f"A row of {what} sums to 0, as if that query could see no key at all. "
                                           "Does your mask block keys it should allow?")
    if bool(((weights.sum(dim=-2) - 1).abs() <= atol).all()):
        cause = ("Its columns sum to 1 instead: the softmax ran over the queries. Take it over the keys, the last "
                 "dimension (dim=-1).")
    elif bool((sums <= 1 + atol).all()):
        cause = ("No row sums to more than 1, as when weights are set to zero after the softmax. Fill the forbidden "
                 "scores with -inf before the softmax, so that each row shares 1 among its allowed keys.")
    else:
        cause = ""
    expect(False, f"Every row of {what} (one query, over all keys) should sum to 1; one row is off by {worst:.3g}. "
                  f"{cause}".rstrip())


def expect_layer(facts, name, d_in, d_out, bias, label):
    layer = facts["layers"].get(name)
    expect(layer is not None and layer["linear"],
           f"{label}.{name} should be an nn.Linear, but it is {'a ' + layer['type'] if layer else 'missing'}. nn.Linear owns "
           "its weight (and bias) and applies them when called.")
    expect((layer["in_features"], layer["out_features"]) == (d_in, d_out),
           f"{label}.{name} should map {d_in} features to {d_out}; it maps {layer['in_features']} to "
           f"{layer['out_features']}.")
    expect(layer["bias"] == bias, f"{label}.{name} {'has no' if bias else 'has a'} bias, but qkv_bias is {bias}: "
                                  "pass bias=qkv_bias to nn.Linear.")


def pair(r, handle, what):
    return r.tensor_pair(handle, what)


def expect_same_shape(got, ref, what):
    expect(tuple(got.shape) == tuple(ref.shape),
           f"{what} should have shape {tuple(ref.shape)}, but it has shape {tuple(got.shape)}.")


def test_sdpa(p):
    # The visible examples (public).
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 9, generator=g)
    h_plain = p.call("scaled_dot_product_attention", q, k, v)
    q1 = torch.tensor([[2.0, 0.0, 0.0, 0.0]])
    k1 = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    h_scale = p.call("scaled_dot_product_attention", q1, k1, torch.zeros(2, 9))
    causal = torch.tril(torch.ones(3, 5, dtype=torch.bool))
    h_causal = p.call("scaled_dot_product_attention", q, k, v, mask=causal)
    blocked = torch.ones(3, 5, dtype=torch.bool)
    blocked[1] = False
    h_blocked = p.call("scaled_dot_product_attention", q, k, v, mask=blocked)
    h_visible_error = p.call("scaled_dot_product_attention", torch.randn(3, 4, generator=g),
                             torch.randn(5, 3, generator=g), torch.randn(5, 2, generator=g))

    # The hidden tests' kinds of input, with fresh numbers.
    randn = p.randn
    cases = []

    def compare(label, q, k, v, mask=None, atol=1e-5, rtol=1e-5):
        handle = p.call("scaled_dot_product_attention", q, k, v, mask=mask)
        cases.append((label, (q, k, v, mask), attention_reference(q, k, v, mask), handle, atol, rtol))

    compare("unbatched, Tq=5, Tk=7, d_k=3, d_v=6", randn(5, 3), randn(7, 3), randn(7, 6))
    compare("batch of 3, Tq=Tk=4, d_k=8, d_v=2", randn(3, 4, 8), randn(3, 4, 8), randn(3, 4, 2))
    compare("(B, H) = (2, 3), Tq=6, Tk=2, d_k=5, d_v=5", randn(2, 3, 6, 5), randn(2, 3, 2, 5), randn(2, 3, 2, 5))
    compare("a single query, Tk=9, d_k=1", randn(1, 1), randn(9, 1), randn(9, 3))
    compare("d_k=16, d_v=1", randn(2, 5, 16), randn(2, 6, 16), randn(2, 6, 1))
    compare("random (Tq, Tk) mask broadcast over a batch of 2", randn(2, 4, 6), randn(2, 6, 6), randn(2, 6, 3),
            mask=torch.cat([torch.ones(4, 1, dtype=torch.bool), randn(4, 5) > 0], dim=1))
    compare("causal (T, T) mask broadcast over (B, H) = (2, 3)", randn(2, 3, 6, 4), randn(2, 3, 6, 4),
            randn(2, 3, 6, 7), mask=torch.tril(torch.ones(6, 6, dtype=torch.bool)))
    lengths = torch.from_numpy(p.rng.integers(1, 6, size=3))
    lengths[0] = 5
    padding = torch.arange(5)[None, :] < lengths[:, None]                      # (B, Tk)
    compare("(B, 1, 1, Tk) padding mask for (B, H) = (3, 2)", randn(3, 2, 4, 3), randn(3, 2, 5, 3),
            randn(3, 2, 5, 2), mask=padding[:, None, None, :])
    compare("(B, 1, Tk) padding mask for a batch of 3", randn(3, 4, 3), randn(3, 5, 3), randn(3, 5, 6),
            mask=padding[:, None, :])
    compare("a (Tk,) mask shared by every query", randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 2),
            mask=torch.tensor([True, False, True, True, False]))
    rows_blocked = torch.ones(2, 5, 4, dtype=torch.bool)
    rows_blocked[0, 0] = False
    rows_blocked[1, 3] = False
    rows_blocked[1, 1, 2:] = False
    compare("(B, Tq, Tk) mask with fully masked rows", randn(2, 5, 3), randn(2, 4, 3), randn(2, 4, 5),
            mask=rows_blocked)
    compare("a mask with no allowed key at all", randn(3, 2), randn(4, 2), randn(4, 3),
            mask=torch.zeros(3, 4, dtype=torch.bool))
    # Large scores, in float64 so that the comparison measures the code and not float32 rounding.
    f64 = torch.float64
    compare("float64, scores in the thousands", randn(2, 4, 6, scale=40.0, dtype=f64),
            randn(2, 5, 6, scale=40.0, dtype=f64), randn(2, 5, 3, dtype=f64), atol=1e-9, rtol=1e-7)
    compare("float64, scores in the thousands, causal mask", randn(5, 8, scale=40.0, dtype=f64),
            randn(5, 8, scale=40.0, dtype=f64), randn(5, 4, dtype=f64),
            mask=torch.tril(torch.ones(5, 5, dtype=torch.bool)), atol=1e-9, rtol=1e-7)
    h_big = p.call("scaled_dot_product_attention", randn(3, 6, 4, scale=100.0), randn(3, 6, 4, scale=100.0),
                   randn(3, 6, 2))
    # Errors name both shapes.
    errors = [(((2, 3, 4), (2, 3, 6), (2, 3, 2)), ("(2, 3, 4)", "(2, 3, 6)"), "the widths d_k of q and k differ"),
              (((2, 3, 4), (2, 5, 4), (2, 6, 4)), ("(2, 5, 4)", "(2, 6, 4)"), "k and v have different numbers of "
                                                                               "tokens")]
    h_errors = [(shapes, words, why, p.call("scaled_dot_product_attention", *(randn(*s) for s in shapes)))
                for shapes, words, why in errors]

    def judge(r):
        out, weights = pair(r, h_plain, "scaled_dot_product_attention(q, k, v) with q (2, 3, 4), k (2, 5, 4), "
                                        "v (2, 5, 9)")
        expect(tuple(out.shape) == (2, 3, 9), f"out for q (2, 3, 4), k (2, 5, 4), v (2, 5, 9) should have shape "
                                              f"(2, 3, 9), but it has shape {tuple(out.shape)}.")
        expect(tuple(weights.shape) == (2, 3, 5), f"weights for q (2, 3, 4), k (2, 5, 4) should have shape (2, 3, 5), "
                                                  f"but they have shape {tuple(weights.shape)}.")
        expect_rows_sum_to_one(weights, "weights")
        expect(bool(torch.all(weights >= 0)), "Attention weights cannot be negative: they come out of a softmax.")
        close_torch(out, weights @ v, atol=1e-5, rtol=1e-5, what="out", on="q (2, 3, 4), k (2, 5, 4), v (2, 5, 9)",
                    cause="out should be the weights times the values, weights @ v (atol=rtol=1e-5).")
        _, w1 = pair(r, h_scale, "scaled_dot_product_attention with one query and two keys")
        w_high, w_low = float(w1[0, 0]), float(w1[0, 1])
        expect(0 < w_low < w_high, "With d_k = 4, a query should give the larger (positive) weight to the key with "
                                   "the larger score (4 against 0).")
        divisor = 4.0 / math.log(w_high / w_low)
        expect(math.isclose(divisor, 2.0, rel_tol=1e-3),
               f"The scores should be divided by sqrt(d_k), with d_k = 4 here; yours behave as if divided by "
               f"{divisor:.4g}." + (" Did you forget to scale?" if math.isclose(divisor, 1.0, rel_tol=0.01) else
                                    " Did you divide by d_k instead of its square root?"
                                    if math.isclose(divisor, 4.0, rel_tol=0.01) else
                                    " That is the square root of d_v = 9, the width of v: scale by the width of the "
                                    "queries and keys." if math.isclose(divisor, 3.0, rel_tol=0.01) else ""))
        _, w_m = pair(r, h_causal, "scaled_dot_product_attention with a (3, 5) mask")
        expect(tuple(w_m.shape) == (2, 3, 5), f"weights with a (3, 5) mask should have shape (2, 3, 5), but they have "
                                              f"shape {tuple(w_m.shape)}.")
        forbidden = w_m.masked_select(~causal.expand(2, 3, 5))
        expect(not (bool(torch.all(w_m.masked_select(causal.expand(2, 3, 5)) == 0)) and bool(torch.any(forbidden != 0))),
               "Your weights are zero exactly where the mask is True: the mask is read the wrong way round. True "
               "means 'may attend', so fill the scores where the mask is False (~mask) with -inf.")
        expect(bool(torch.all(forbidden == 0)), "Where the mask is False the weight must be exactly 0. Fill the scores "
                                                "where the mask is False (~mask) with -inf (not 0) before the softmax.")
        expect_rows_sum_to_one(w_m, "weights with a causal mask")
        out_b, w_b = pair(r, h_blocked, "scaled_dot_product_attention with a query that may attend to nothing")
        expect(not bool(torch.isnan(w_b).any()) and not bool(torch.isnan(out_b).any()),
               "A query with no allowed key produced NaN: the softmax of a row of -inf is 0/0. Set the weights of "
               "such rows to zero with torch.where, as chapter 4 does: it selects, where multiplying by 0 would keep "
               "the NaN (NaN * 0 is NaN).")
        expect(bool(torch.all(w_b[:, 1] == 0) and torch.all(out_b[:, 1] == 0)),
               "Query 1 has no allowed key, so its weights and output should be all zeros. If you filled with a "
               "large negative number such as -1e9, the row became uniform.")
        expect_rows_sum_to_one(w_b[:, [0, 2]], "the rows with an allowed key")
        expect_value_error(r, h_visible_error, "scaled_dot_product_attention with q of shape (3, 4) and k of shape "
                                               "(5, 3) (their widths d_k differ)", shapes=((3, 4), (5, 3)))
        for label, (q_, k_, v_, mask), (ref_out, ref_w), h, atol, rtol in cases:
            got_out, got_w = pair(r, h, f"scaled_dot_product_attention on {label}")
            expect_same_shape(got_w, ref_w, f"The weights on {label}")
            expect_same_shape(got_out, ref_out, f"out on {label}")
            widths = [("d_v, the width of v", v_.shape[-1])]
            close(got_w, ref_w, atol=atol, rtol=rtol, what="scaled_dot_product_attention's weight matrix", on=label,
                  cause=lambda: (weights_cause(got_w, q_, k_, mask, widths=widths)
                                 + f" (tolerance atol={atol}, rtol={rtol})").lstrip())
            close_torch(got_out, ref_out, atol=atol, rtol=rtol, what="scaled_dot_product_attention's out", on=label,
                        cause=f"out should be the weights times the values (tolerance atol={atol}, rtol={rtol}).")
        big_out, big_w = pair(r, h_big, "scaled_dot_product_attention with very large scores")
        expect(bool(torch.isfinite(big_w).all() and torch.isfinite(big_out).all()),
               "float32 scores in the tens of thousands gave inf or NaN: the softmax must not overflow.")
        expect((big_w.sum(dim=-1) - 1).abs().max() < 1e-5, "With very large float32 scores the rows no longer sum to 1.")
        for shapes, words, why, h in h_errors:
            expect_value_error(r, h, f"scaled_dot_product_attention with q, k, v of shapes {shapes} ({why})",
                               shapes=[ast.literal_eval(w) for w in words])

    return judge


def self_attention_cause(got_w, got_out, held, x, mask, d_in):
    """The likely cause of SelfAttention's wrong weights or output, in words."""
    q, k, v = (F.linear(x, held[f"{n}.weight"], held.get(f"{n}.bias")) for n in ("W_q", "W_k", "W_v"))
    d_out = q.shape[-1]
    scaled = q @ k.transpose(-2, -1) / math.sqrt(d_out)
    full = None if mask is None else mask.expand(scaled.shape)
    if matches(got_w, masked_weights(k @ q.transpose(-2, -1) / math.sqrt(d_out), full)) and not matches(
            got_w, masked_weights(scaled, full)):
        return ("They are the weights of the scores k q^T: are the queries and keys swapped? Queries come from W_q, "
                "keys from W_k.")
    if matches(got_w, masked_weights(q @ k.transpose(-2, -1), full)):
        return "They match unscaled scores: divide by sqrt(d_k), with d_k = d_out."
    if d_in != d_out and matches(got_w, masked_weights(q @ k.transpose(-2, -1) / math.sqrt(d_in), full)):
        return f"They match scores divided by sqrt(d_in) = sqrt({d_in}): divide by sqrt(d_k), with d_k = d_out."
    if mask is not None and matches(got_w, masked_weights(scaled, None)):
        return "Every key is allowed in them: pass the mask on to scaled_dot_product_attention."
    bias = {n: held.get(f"{n}.bias") for n in ("W_q", "W_k", "W_v")}
    if any(b is not None for b in bias.values()):
        q0, k0 = (F.linear(x, held[f"{n}.weight"]) for n in ("W_q", "W_k"))
        if matches(got_w, masked_weights(q0 @ k0.transpose(-2, -1) / math.sqrt(d_out), full)):
            return "They match the layers without their biases: pass bias=qkv_bias to nn.Linear, and call the layers."
    if matches(got_w, masked_weights(scaled, full)):
        if matches(got_out, got_w @ k):
            return "out looks like the weights times the keys: the values come from W_v."
        return "out should be the weights times the values W_v(x)."
    return "The scores are W_q(x) W_k(x)^T / sqrt(d_out), one row per query."


def test_self_attention(p):
    randn = p.randn
    # The visible test's layer: SelfAttention(6, 3), with the grader's weights.
    visible = p.module("SelfAttention", 6, 3)
    h_facts = visible.facts("W_q", "W_k", "W_v")
    weights = {f"{name}.weight": linear_weights(p, 6, 3, False)[0] for name in ("W_q", "W_k", "W_v")}
    visible.set(weights)
    x = randn(4, 6)
    x_batch = torch.stack([x, randn(4, 6)])
    causal = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    h_x = visible.call(x)
    h_batch = visible.call(x_batch)
    h_masked = visible.call(x_batch, mask=causal)
    h_wrong_width = visible.call(randn(4, 5))
    with_bias = p.module("SelfAttention", 6, 3, qkv_bias=True)
    h_bias_facts = with_bias.facts("W_q", "W_k", "W_v")

    # The hidden tests' configurations, with the grader's weights and inputs.
    configs = []
    for d_in, d_out, bias in [(5, 7, True), (8, 2, False), (3, 3, True)]:
        label = f"SelfAttention({d_in}, {d_out}, qkv_bias={bias})"
        m = p.module("SelfAttention", d_in, d_out, qkv_bias=bias)
        facts = m.facts("W_q", "W_k", "W_v")
        params = {}
        for name in ("W_q", "W_k", "W_v"):
            weight, b = linear_weights(p, d_in, d_out, bias)
            params[f"{name}.weight"] = weight
            if bias:
                params[f"{name}.bias"] = b
        m.set(params)
        m.eval()
        lengths = torch.from_numpy(p.rng.integers(1, 7, size=3))
        lengths[0] = 6
        padding = (torch.arange(6)[None, :] < lengths[:, None])[:, None, :]      # (B, 1, T)
        cases = []
        for what, x_, mask in [
            ("one sequence of 6 tokens", randn(6, d_in), None),
            ("a batch of 3 sequences of 6 tokens", randn(3, 6, d_in), None),
            ("a batch of 3 with a (B, 1, T) padding mask", randn(3, 6, d_in), padding),
            ("a batch of 2 with a (T, T) causal mask", randn(2, 6, d_in), torch.tril(torch.ones(6, 6, dtype=torch.bool))),
            ("one token", randn(1, d_in), None),
        ]:
            cases.append((what, x_, mask, m.call(x_, mask=mask)))
        bad_shape = (3, 4, d_in + 2)
        h_error = m.call(randn(*bad_shape))
        expected = sorted(f"{n}.{w}" for n in ("W_q", "W_k", "W_v") for w in (["weight", "bias"] if bias else ["weight"]))
        configs.append((label, d_in, d_out, bias, facts, expected, params, cases, bad_shape, h_error))

    def judge(r):
        facts = r.facts(h_facts, "SelfAttention(6, 3)")
        for name in ("W_q", "W_k", "W_v"):
            expect_layer(facts, name, 6, 3, False, "SelfAttention(6, 3)")
        facts_bias = r.facts(h_bias_facts, "SelfAttention(6, 3, qkv_bias=True)")
        missing = [n for n in ("W_q", "W_k", "W_v") if not (facts_bias["layers"].get(n) or {}).get("bias")]
        expect(not missing, f"SelfAttention(6, 3, qkv_bias=True) should give W_q, W_k and W_v a bias, but "
                            f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} none. Pass bias=qkv_bias "
                            "to nn.Linear.")
        held = effective_params({k: v for k, v in weights.items()}, ("W_q", "W_k", "W_v"), facts)
        out, w = pair(r, h_x, "attn(x) with x of shape (4, 6)")
        expect(tuple(out.shape) == (4, 3), f"out for x of shape (4, 6) should have shape (4, 3), but it has shape "
                                           f"{tuple(out.shape)}.")
        expect(tuple(w.shape) == (4, 4), f"weights for x of shape (4, 6) should have shape (4, 4), but they have "
                                         f"shape {tuple(w.shape)}.")
        expect_rows_sum_to_one(w, "weights")
        ref_out, ref_w = module_reference(held, x)
        close(w, ref_w, atol=1e-5, rtol=1e-5, what="attn(x)'s weight matrix", on="x of shape (4, 6)",
              cause=lambda: self_attention_cause(w, out, held, x, None, 6))
        close(out, ref_out, atol=1e-5, rtol=1e-5, what="attn(x)'s out", on="x of shape (4, 6)",
              cause=lambda: self_attention_cause(w, out, held, x, None, 6))
        out_b, w_b = pair(r, h_batch, "attn(x_batch) with x_batch of shape (2, 4, 6)")
        expect(tuple(out_b.shape) == (2, 4, 3) and tuple(w_b.shape) == (2, 4, 4),
               f"attn(x_batch) for a batch of shape (2, 4, 6) should return out (2, 4, 3) and weights (2, 4, 4), but "
               f"they have shapes {tuple(out_b.shape)} and {tuple(w_b.shape)}.")
        close_torch(out_b[0], out, atol=1e-5, rtol=1e-5, what="Sequence 0 of attn(x_batch)", on="a batch whose "
                    "sequence 0 is x", cause="Its output should equal attn(x) (atol=rtol=1e-5). Sequences in a batch "
                                             "must not mix: work on the last two dimensions only.")
        _, w_m = pair(r, h_masked, "attn(x_batch, mask=causal)")
        expect(bool(torch.all(w_m.masked_select(~causal.expand(w_m.shape)) == 0)),
               "attn(x_batch, mask=causal) gave weight to keys where the mask is False. Pass the mask on to "
               "scaled_dot_product_attention.")
        expect_value_error(r, h_wrong_width, "SelfAttention(6, 3) called on x of shape (4, 5)", shapes=((4, 5),),
                           alone=(6,))
        for label, d_in, d_out, bias, h_facts_m, expected, params, cases, bad_shape, h_error in configs:
            facts = r.facts(h_facts_m, label)
            expect(facts["module"], f"{label} should be an nn.Module.")
            for name in ("W_q", "W_k", "W_v"):
                expect_layer(facts, name, d_in, d_out, bias, label)
            names = sorted(name for name, _ in facts["parameters"])
            expect(names == expected, f"{label} should have the parameters {expected}, not {names}.")
            # The weights the module really holds (layers may share one), as the hidden test uses them.
            held = effective_params(params, ("W_q", "W_k", "W_v"), facts)
            for what, x_, mask, h in cases:
                ref_out, ref_w = module_reference(held, x_, mask)
                got_out, got_w = pair(r, h, f"{label} on {what}")
                expect_same_shape(got_out, ref_out, f"{label}'s out on {what}")
                cause = lambda: self_attention_cause(got_w, got_out, held, x_, mask, d_in) + " (tolerance atol=rtol=1e-5)"
                close(got_w, ref_w, atol=1e-5, rtol=1e-5, what=f"{label}'s weight matrix", on=what, cause=cause)
                close(got_out, ref_out, atol=1e-5, rtol=1e-5, what=f"{label}'s out", on=what, cause=cause)
            expect_value_error(r, h_error, f"{label} called on x of shape {bad_shape}", shapes=(bad_shape,),
                               alone=(d_in,), hint="Check that x is 2- or 3-dimensional with last dimension d_in.")

    return judge


def test_causal_attention(p):
    randn = p.randn
    # The visible test's layer, with the grader's weights.
    visible = p.module("CausalSelfAttention", 6, 3, context_len=8)
    h_facts = visible.facts("qkv")
    weight, _ = linear_weights(p, 6, 9, False)
    visible.set({"qkv.weight": weight})
    x = randn(5, 6)
    x_changed = x.clone()
    x_changed[-1] = randn(6)
    x_batch = torch.stack([x, randn(5, 6), randn(5, 6)])
    h_x = visible.call(x)
    h_changed = visible.call(x_changed)
    h_batch = visible.call(x_batch)
    h_too_long = visible.call(randn(9, 6))
    silent = weight.clone()
    silent[6:] = 0
    visible.set({"qkv.weight": silent})
    h_silent = visible.call(x)

    # The hidden tests' configurations, with the grader's weights and inputs.
    configs = []
    for d_in, d_out, ctx, bias, shapes in [
        (5, 4, 6, False, [(6, 5), (3, 6, 5), (2, 3, 5), (1, 5)]),
        (8, 2, 10, True, [(2, 7, 8), (10, 8), (4, 1, 8)]),
        (3, 5, 4, True, [(4, 3), (2, 2, 3)]),
    ]:
        label = f"CausalSelfAttention({d_in}, {d_out}, context_len={ctx}, qkv_bias={bias})"
        m = p.module("CausalSelfAttention", d_in, d_out, ctx, qkv_bias=bias)
        facts = m.facts("qkv")
        w, b = linear_weights(p, d_in, 3 * d_out, bias)
        m.set({"qkv.weight": w, **({"qkv.bias": b} if bias else {})})
        m.eval()
        cases = []
        for shape in shapes:
            x_ = randn(*shape)
            ref_out, ref_w, _ = causal_reference(x_, w, b, d_out)
            cases.append((shape, x_, ref_out, ref_w, m.call(x_)))
        errors = [(shape, m.call(randn(*shape))) for shape in [(ctx + 1, d_in), (2, ctx + 3, d_in)]]
        configs.append((label, d_in, d_out, ctx, bias, facts, w, b, cases, errors))

    def judge(r):
        facts = r.facts(h_facts, "CausalSelfAttention(6, 3, context_len=8)")
        expect_layer(facts, "qkv", 6, 9, False, "causal_attn")
        names = sorted(name for name, _ in facts["parameters"])
        expect(names == ["qkv.weight"], f"CausalSelfAttention(6, 3, context_len=8) should have one parameter, "
                                        f"qkv.weight, but it has {names}. The causal mask is not learned: store it "
                                        "with self.register_buffer(...), not as an nn.Parameter.")
        expect(any(shape[-2:] == (8, 8) for _, shape in facts["buffers"]),
               "No buffer of shape (context_len, context_len) = (8, 8) is registered. Store the causal mask with "
               "self.register_buffer(name, tensor): a plain attribute does not move with .to(device).")
        out, w = pair(r, h_x, "causal_attn(x) with 5 tokens, fewer than context_len = 8,")
        expect(tuple(out.shape) == (5, 3) and tuple(w.shape) == (5, 5),
               f"causal_attn(x) for x of shape (5, 6) should return out (5, 3) and weights (5, 5), but they have "
               f"shapes {tuple(out.shape)} and {tuple(w.shape)}.")
        future = torch.ones(5, 5, dtype=torch.bool).triu(diagonal=1)
        expect(bool(torch.all(w[future] == 0)), "Some query gives weight to a later token: everything above the "
                                                "diagonal should be 0. Is your mask the right way round (True = may "
                                                "attend)?")
        expect(not bool(torch.all(w.diagonal() == 0)), "Every query gives weight 0 to its own token, but a token may "
                                                       "attend to itself. Does your mask allow the diagonal (torch.tril "
                                                       "keeps it)?")
        expect_rows_sum_to_one(w, "weights")
        expect(bool(torch.isclose(w[0, 0], torch.tensor(1.0, dtype=w.dtype))),
               "Query 0 can see only itself, so its weight on key 0 should be 1; it is not.")
        ref_out, ref_w, _ = causal_reference(x, weight, None, 3)
        close(w, ref_w, atol=1e-5, rtol=1e-5, what="causal_attn(x)'s weight matrix", on="x of shape (5, 6)",
              cause=lambda: causal_cause(w, x, weight, None, 3))
        out_changed, _ = pair(r, h_changed, "causal_attn(x_changed)")
        close_torch(out_changed[:-1], out[:-1], atol=1e-6, rtol=1e-5, what="The outputs of the earlier tokens",
                    on="x with only its last token changed",
                    cause="They should not change (atol=1e-6, rtol=1e-5): information is flowing from the future.")
        out_b, w_b = pair(r, h_batch, "causal_attn(x_batch) with x_batch of shape (3, 5, 6)")
        expect(tuple(out_b.shape) == (3, 5, 3) and tuple(w_b.shape) == (3, 5, 5),
               f"causal_attn(x_batch) for a batch of shape (3, 5, 6) should return out (3, 5, 3) and weights "
               f"(3, 5, 5), but they have shapes {tuple(out_b.shape)} and {tuple(w_b.shape)}.")
        close_torch(out_b[0], out, atol=1e-5, rtol=1e-5, what="Sequence 0 of causal_attn(x_batch)",
                    on="a batch whose sequence 0 is x", cause="Its output should equal causal_attn(x) (atol=rtol=1e-5).")
        expect_value_error(r, h_too_long, "causal_attn on a sequence of 9 tokens (longer than context_len = 8)",
                           mentions=("8", "9"))
        out_silent, _ = pair(r, h_silent, "causal_attn(x) with the value part of qkv zeroed")
        expect(bool(torch.all(out_silent == 0)),
               "With the value part of qkv (its last d_out output features) set to zero, every output should be 0, "
               "but it is not. Split the output of qkv into queries, keys and values, in that order, each d_out wide.")
        for label, d_in, d_out, ctx, bias, h_facts_m, w_, b_, cases, errors in configs:
            facts = r.facts(h_facts_m, label)
            expect(facts["module"], f"{label} should be an nn.Module.")
            expect_layer(facts, "qkv", d_in, 3 * d_out, bias, label)
            names = sorted(name for name, _ in facts["parameters"])
            expected = ["qkv.bias", "qkv.weight"] if bias else ["qkv.weight"]
            expect(names == expected, f"{label} should have the parameters {expected}, not {names}. The causal mask "
                                      "is not learned: store it with self.register_buffer(...).")
            expect(any(shape[-2:] == (ctx, ctx) for _, shape in facts["buffers"]),
                   f"{label} has no registered buffer of shape ({ctx}, {ctx}) for its causal mask.")
            for shape, x_, ref_out, ref_w, h in cases:
                got_out, got_w = pair(r, h, f"{label} on x of shape {shape}")
                expect_same_shape(got_out, ref_out, f"{label}'s out on x of shape {shape}")
                close(got_w, ref_w, atol=1e-5, rtol=1e-5, what=f"{label}'s weight matrix", on=f"x of shape {shape}",
                      cause=lambda: causal_cause(got_w, x_, w_, b_, d_out) + " (tolerance atol=rtol=1e-5)")
                close_torch(got_out, ref_out, atol=1e-5, rtol=1e-5, what=f"{label}'s out", on=f"x of shape {shape}",
                            cause="out should be the weights times the values, the last d_out features of qkv(x) "
                                  "(tolerance atol=rtol=1e-5).")
            for shape, h in errors:
                expect_value_error(r, h, f"{label} on x of shape {shape} (longer than context_len)",
                                   mentions=(str(ctx), str(shape[-2])),
                                   hint="Compare the length T with context_len before you slice the mask.")

    return judge


def test_causal_dropout(p):
    randn = p.randn
    seeds = [int(s) for s in p.rng.integers(0, 2**31, size=4)]
    # The visible test: dropout=0.5.
    visible = p.module("CausalSelfAttention", 6, 4, context_len=8, dropout=0.5)
    h_facts = visible.facts("qkv")
    weight, _ = linear_weights(p, 6, 12, False)
    visible.set({"qkv.weight": weight})
    x = randn(2, 6, 6)
    visible.eval()
    h_e1, h_e2 = visible.call(x), visible.call(x)
    visible.train()
    visible.seed(seeds[0])
    h_t = visible.call(x)
    values_visible = F.linear(x, weight)[..., 8:]

    # The hidden test: dropout=0.2, with a bias.
    dropout = 0.2
    m = p.module("CausalSelfAttention", 5, 3, context_len=7, dropout=dropout, qkv_bias=True)
    h_facts_m = m.facts("qkv")
    w, b = linear_weights(p, 5, 9, True)
    m.set({"qkv.weight": w, "qkv.bias": b})
    x_long, x_short = randn(4, 7, 5), randn(4, 5)
    ref_out, ref_w, ref_v = causal_reference(x_long, w, b, 3)
    m.eval()
    eval_cases = []
    for inp in (x_long, x_short):
        eval_cases.append((inp, causal_reference(inp, w, b, 3), m.call(inp), m.call(inp)))
    m.train()
    m.seed(seeds[1])
    h_train = m.call(x_long)
    # The share of dropped weights, on a batch large enough that a fair dropout lands in (0.05, 0.45) whatever
    # the seed (1792 weights: 0.2 +- 0.0095).
    x_share = randn(64, 7, 5)
    share_w = causal_reference(x_share, w, b, 3)[1]
    m.seed(seeds[3])
    h_share = m.call(x_share)
    m.eval()
    h_eval_again = m.call(x_long)
    m0 = p.module("CausalSelfAttention", 5, 3, context_len=7, dropout=0.0, qkv_bias=True)
    w0, b0 = linear_weights(p, 5, 9, True)
    m0.set({"qkv.weight": w0, "qkv.bias": b0})
    m0.train()
    m0.seed(seeds[2])
    h_zero = m0.call(x_long)
    ref_zero = causal_reference(x_long, w0, b0, 3)[0]

    def judge(r):
        facts = r.facts(h_facts, "CausalSelfAttention(6, 4, context_len=8, dropout=0.5)")
        expect(0.5 in facts["dropout"], "CausalSelfAttention(6, 4, context_len=8, dropout=0.5) should hold an "
                                        "nn.Dropout(0.5); it holds none with that rate.")
        out_e1, w_e1 = pair(r, h_e1, "drop_attn(x) in eval() mode, with x of shape (2, 6, 6),")
        out_e2, w_e2 = pair(r, h_e2, "drop_attn(x) in eval() mode, called again,")
        expect(not (bool(torch.isnan(out_e1).any()) or bool(torch.isnan(w_e1).any())),
               "In eval() mode drop_attn(x) returned NaN. The softmax gives NaN for a row whose scores are all -inf, "
               "yet under a causal mask every query may attend at least to itself: is the mask the right way round?")
        expect(torch.equal(out_e1, out_e2) and torch.equal(w_e1, w_e2),
               "In eval() mode two calls on the same input gave different results: dropout is still active. An "
               "nn.Dropout module follows the module's train()/eval() mode; F.dropout needs training=self.training.")
        expect_rows_sum_to_one(w_e1, "the weights in eval() mode")
        out_t, w_t = pair(r, h_t, "drop_attn(x) in train() mode")
        expect(w_t.shape == w_e1.shape, f"The weights in train() mode have shape {tuple(w_t.shape)}, but those in "
                                        f"eval() mode {tuple(w_e1.shape)}.")
        expect(bool(((w_t == 0) & (w_e1 > 0)).any()),
               "In train() mode with dropout=0.5 none of the returned weights was set to zero. Apply the dropout to "
               "the attention weights, not to the output, and return the weights after dropout.")
        kept = w_t != 0
        factors = w_t[kept] / w_e1[kept]
        low, high = f"{factors.min():.3g}", f"{factors.max():.3g}"
        expect(torch.allclose(factors, torch.full_like(factors, 2.0), atol=1e-4, rtol=1e-4),
               f"The weights that survive dropout should be the eval() weights times 1 / (1 - p); yours are "
               f"multiplied by {low if low == high else f'factors between {low} and {high}'}. nn.Dropout does this "
               "rescaling for you.")
        close_torch(out_t, w_t @ values_visible, atol=1e-5, rtol=1e-5, what="out in train() mode",
                    on="x of shape (2, 6, 6) with dropout=0.5",
                    cause="It should be the returned weights (after dropout) times the values (atol=rtol=1e-5). "
                          "Compute out from the weights after dropout, and return those same weights.")

        facts = r.facts(h_facts_m, "CausalSelfAttention(5, 3, context_len=7, dropout=0.2)")
        expect(dropout in facts["dropout"], "CausalSelfAttention(5, 3, context_len=7, dropout=0.2) should hold an "
                                            "nn.Dropout(0.2); it holds none with that rate.")
        for inp, (r_out, r_w, _), h1, h2 in eval_cases:
            shape = tuple(inp.shape)
            out, w_ = pair(r, h1, f"CausalSelfAttention with dropout=0.2 in eval() mode on x of shape {shape}")
            close(w_, r_w, atol=1e-5, rtol=1e-5, what="The weight matrix in eval() mode",
                  on=f"x of shape {shape} with dropout=0.2",
                  cause=lambda: ("In eval() mode they should be those without dropout (atol=rtol=1e-5). "
                                 + causal_cause(w_, inp, w, b, 3)))
            close_torch(out, r_out, atol=1e-5, rtol=1e-5, what="out in eval() mode",
                        on=f"x of shape {shape} with dropout=0.2",
                        cause="In eval() mode it should be the output without dropout (atol=rtol=1e-5).")
            expect(torch.equal(pair(r, h2, "the same call in eval() mode, again")[0], out),
                   "eval() mode is not deterministic: two calls on the same input gave different outputs. Dropout "
                   "should follow the module's train()/eval() mode.")
        out_t, w_t = pair(r, h_train, "CausalSelfAttention with dropout=0.2 in train() mode")
        expect_same_shape(w_t, ref_w, "The weights in train() mode")
        dropped = (w_t == 0) & (ref_w > 0)
        expect(bool(dropped.any()), "In train() mode with dropout=0.2 no attention weight was dropped. Apply the "
                                    "dropout to the attention weights, and return the weights after dropout.")
        kept = w_t != 0
        close_torch(w_t[kept], ref_w[kept] / (1 - dropout), atol=1e-5, rtol=1e-5,
                    what="The weights that survive dropout", on="x of shape (4, 7, 5)",
                    cause="With dropout=0.2 they should be scaled by 1 / (1 - 0.2) (atol=rtol=1e-5).")
        close_torch(out_t, w_t @ ref_v, atol=1e-5, rtol=1e-5, what="out in train() mode", on="x of shape (4, 7, 5)",
                    cause="It should be the returned weights times the values (atol=rtol=1e-5).")
        _, w_s = pair(r, h_share, "CausalSelfAttention with dropout=0.2 in train() mode on x of shape (64, 7, 5)")
        expect_same_shape(w_s, share_w, "The weights in train() mode on x of shape (64, 7, 5)")
        share = ((w_s == 0) & (share_w > 0)).sum().item() / (share_w > 0).sum().item()
        expect(0.05 < share < 0.45, f"With dropout=0.2 a share of {share:.2f} of the weights was dropped, on x of "
                                    "shape (64, 7, 5); about 0.2 should be. Drop with the module's own rate p.")
        close_torch(pair(r, h_eval_again, "eval() after train()")[0], ref_out, atol=1e-5, rtol=1e-5,
                    what="out after train() and then eval() again", on="x of shape (4, 7, 5)",
                    cause="Dropout should be off again (atol=rtol=1e-5).")
        close_torch(pair(r, h_zero, "CausalSelfAttention with dropout=0.0 in train() mode")[0], ref_zero, atol=1e-5,
                    rtol=1e-5, what="out with dropout=0.0 in train() mode", on="x of shape (4, 7, 5)",
                    cause="With dropout=0.0, train() mode should change nothing (atol=rtol=1e-5).")

    return judge


CHECKS = {
    "test_sdpa": test_sdpa,
    "test_self_attention": test_self_attention,
    "test_causal_attention": test_causal_attention,
    "test_causal_dropout": test_causal_dropout,
}
