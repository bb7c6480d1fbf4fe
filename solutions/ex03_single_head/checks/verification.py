"""Verification of ex03_single_head (PyTorch): one check per graded test cell.

Functions are called on fresh inputs of the hidden tests' shapes. Classes are
instantiated in the sandbox, which reports their structure (layers, parameter
names, buffers, dropout rates) as built-in types; the grader then copies its
own weights into the named layers (``W_q``, ``W_k``, ``W_v``, ``qkv``) and
compares the outputs with PyTorch's attention computed here, with the same
weights and the hidden tests' tolerances. Error messages are checked on the
hidden tests' own bad inputs.
"""

import ast
import math

import torch
import torch.nn.functional as F

from tools.verification.probes import close_torch, effective_params, expect, expect_value_error, names_shape


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


def expect_shape_error(r, handle, what, shapes, mentions=()):
    """A ValueError whose message names every shape of ``shapes`` (by the notebooks' rule) and contains
    every text of ``mentions``."""
    expect_value_error(r, handle, what, mentions=mentions)
    message = r.raised(handle).message
    expect(all(names_shape(message, shape) for shape in shapes),
           f"the ValueError of {what} does not name the shapes {list(shapes)}: {message[:200]!r}")


def module_reference(params, x, mask=None):
    q, k, v = (F.linear(x, params[f"{n}.weight"], params.get(f"{n}.bias")) for n in ("W_q", "W_k", "W_v"))
    return attention_reference(q, k, v, mask)


def causal_reference(x, weight, bias, d_out):
    q, k, v = F.linear(x, weight, bias).split(d_out, dim=-1)
    T = x.shape[-2]
    eye = torch.eye(T, dtype=x.dtype).expand(*x.shape[:-2], T, T)
    return (F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, eye, is_causal=True), v)


def linear_weights(p, d_in, d_out, bias):
    """A weight (and bias) as nn.Linear would draw them, from this run's generator."""
    bound = 1 / math.sqrt(d_in)
    weight = (torch.rand(d_out, d_in, generator=p.gen) * 2 - 1) * bound
    return weight, ((torch.rand(d_out, generator=p.gen) * 2 - 1) * bound if bias else None)


def expect_rows_sum_to_one(weights, what, atol=1e-5):
    expect(not bool(torch.isnan(weights).any()), f"{what} contains NaN")
    sums = weights.sum(dim=-1)
    expect(not bool(torch.any(sums == 0)), f"a row of {what} sums to 0")
    expect((sums - 1).abs().max().item() <= atol, f"the rows of {what} do not sum to 1")


def expect_layer(facts, name, d_in, d_out, bias, label):
    layer = facts["layers"].get(name)
    expect(layer is not None and layer["linear"], f"{label}.{name} is not an nn.Linear")
    expect((layer["in_features"], layer["out_features"]) == (d_in, d_out),
           f"{label}.{name} maps {layer['in_features']} features to {layer['out_features']}, not {d_in} to {d_out}")
    expect(layer["bias"] == bias, f"{label}.{name} {'has no' if bias else 'has a'} bias")


def pair(r, handle, what):
    return r.tensor_pair(handle, what)


def test_sdpa(p):
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

    randn = p.randn
    cases = []

    def compare(label, q, k, v, mask=None, atol=1e-5, rtol=1e-5):
        handle = p.call("scaled_dot_product_attention", q, k, v, mask=mask)
        cases.append((label, attention_reference(q, k, v, mask), handle, atol, rtol))

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
    padding = torch.arange(5)[None, :] < lengths[:, None]
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
    f64 = torch.float64
    compare("float64, scores in the thousands", randn(2, 4, 6, scale=40.0, dtype=f64),
            randn(2, 5, 6, scale=40.0, dtype=f64), randn(2, 5, 3, dtype=f64), atol=1e-9, rtol=1e-7)
    compare("float64, scores in the thousands, causal mask", randn(5, 8, scale=40.0, dtype=f64),
            randn(5, 8, scale=40.0, dtype=f64), randn(5, 4, dtype=f64),
            mask=torch.tril(torch.ones(5, 5, dtype=torch.bool)), atol=1e-9, rtol=1e-7)
    h_big = p.call("scaled_dot_product_attention", randn(3, 6, 4, scale=100.0), randn(3, 6, 4, scale=100.0),
                   randn(3, 6, 2))
    errors = [(((2, 3, 4), (2, 3, 6), (2, 3, 2)), ("(2, 3, 4)", "(2, 3, 6)")),
              (((2, 3, 4), (2, 5, 4), (2, 6, 4)), ("(2, 5, 4)", "(2, 6, 4)"))]
    h_errors = [(shapes, words, p.call("scaled_dot_product_attention", *(randn(*s) for s in shapes)))
                for shapes, words in errors]

    def judge(r):
        out, weights = pair(r, h_plain, "scaled_dot_product_attention(q, k, v)")
        expect(tuple(out.shape) == (2, 3, 9), f"out has shape {tuple(out.shape)}, expected (2, 3, 9)")
        expect(tuple(weights.shape) == (2, 3, 5), f"weights have shape {tuple(weights.shape)}, expected (2, 3, 5)")
        expect_rows_sum_to_one(weights, "weights")
        expect(bool(torch.all(weights >= 0)), "some attention weights are negative")
        close_torch(out, weights @ v, atol=1e-5, rtol=1e-5, what="out is not weights @ v")
        _, w1 = pair(r, h_scale, "scaled_dot_product_attention(q1, k1, v1)")
        w_high, w_low = float(w1[0, 0]), float(w1[0, 1])
        expect(0 < w_low < w_high, "the key with the larger score does not get the larger weight")
        expect(math.isclose(4.0 / math.log(w_high / w_low), 2.0, rel_tol=1e-3), "the scores are not divided by sqrt(d_k)")
        _, w_m = pair(r, h_causal, "scaled_dot_product_attention with a (3, 5) mask")
        expect(tuple(w_m.shape) == (2, 3, 5), "weights with a (3, 5) mask have the wrong shape")
        expect(bool(torch.all(w_m.masked_select(~causal) == 0)), "a weight where the mask is False is not 0")
        expect_rows_sum_to_one(w_m, "weights with a causal mask")
        out_b, w_b = pair(r, h_blocked, "scaled_dot_product_attention with a blocked query")
        expect(not torch.isnan(w_b).any() and not torch.isnan(out_b).any(), "a query with no allowed key produced NaN")
        expect(bool(torch.all(w_b[:, 1] == 0) and torch.all(out_b[:, 1] == 0)),
               "a query with no allowed key does not get zero weights and output")
        expect_rows_sum_to_one(w_b[:, [0, 2]], "the rows with an allowed key")
        expect_shape_error(r, h_visible_error, "q (3, 4) and k (5, 3)", shapes=((3, 4), (5, 3)))
        for label, (ref_out, ref_w), h, atol, rtol in cases:
            got_out, got_w = pair(r, h, label)
            expect(tuple(got_w.shape) == tuple(ref_w.shape), f"{label}: weights have shape {tuple(got_w.shape)}")
            expect(tuple(got_out.shape) == tuple(ref_out.shape), f"{label}: out has shape {tuple(got_out.shape)}")
            close_torch(got_w, ref_w, atol=atol, rtol=rtol, what=f"{label}: weights")
            close_torch(got_out, ref_out, atol=atol, rtol=rtol, what=f"{label}: out")
        big_out, big_w = pair(r, h_big, "scaled_dot_product_attention with very large scores")
        expect(bool(torch.isfinite(big_w).all() and torch.isfinite(big_out).all()),
               "float32 scores in the tens of thousands gave inf or NaN")
        expect((big_w.sum(dim=-1) - 1).abs().max() < 1e-5, "with very large float32 scores the rows do not sum to 1")
        for shapes, words, h in h_errors:
            expect_shape_error(r, h, f"q, k, v of shapes {shapes}", shapes=[ast.literal_eval(w) for w in words])

    return judge


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
        padding = (torch.arange(6)[None, :] < lengths[:, None])[:, None, :]
        cases = []
        for what, x_, mask in [
            ("one sequence of 6 tokens", randn(6, d_in), None),
            ("a batch of 3 sequences of 6 tokens", randn(3, 6, d_in), None),
            ("a batch of 3 with a (B, 1, T) padding mask", randn(3, 6, d_in), padding),
            ("a batch of 2 with a (T, T) causal mask", randn(2, 6, d_in), torch.tril(torch.ones(6, 6, dtype=torch.bool))),
            ("one token", randn(1, d_in), None),
        ]:
            handle = m.call(x_) if mask is None else m.call(x_, mask=mask)
            cases.append((what, x_, mask, handle))
        bad_shape = (3, 4, d_in + 2)
        h_error = m.call(randn(*bad_shape))
        expected = sorted(f"{n}.{w}" for n in ("W_q", "W_k", "W_v") for w in (["weight", "bias"] if bias else ["weight"]))
        configs.append((label, d_in, d_out, bias, facts, expected, params, cases, bad_shape, h_error))

    def judge(r):
        facts = r.facts(h_facts, "SelfAttention(6, 3)")
        for name in ("W_q", "W_k", "W_v"):
            expect_layer(facts, name, 6, 3, False, "SelfAttention(6, 3)")
        out, w = pair(r, h_x, "attn(x) with x of shape (4, 6)")
        expect(tuple(out.shape) == (4, 3) and tuple(w.shape) == (4, 4), "attn(x) has the wrong shapes")
        expect_rows_sum_to_one(w, "weights")
        out_b, w_b = pair(r, h_batch, "attn(x_batch)")
        expect(tuple(out_b.shape) == (2, 4, 3) and tuple(w_b.shape) == (2, 4, 4), "attn(x_batch) has the wrong shapes")
        close_torch(out_b[0], out, atol=1e-5, rtol=1e-5, what="sequence 0 of a batch differs from the sequence alone")
        _, w_m = pair(r, h_masked, "attn(x_batch, mask=causal)")
        expect(bool(torch.all(w_m.masked_select(~causal) == 0)), "attn(x_batch, mask=causal) ignores the mask")
        expect_shape_error(r, h_wrong_width, "SelfAttention(6, 3) on x of shape (4, 5)", shapes=((4, 5),), mentions=("6",))
        for label, d_in, d_out, bias, h_facts_m, expected, params, cases, bad_shape, h_error in configs:
            facts = r.facts(h_facts_m, label)
            expect(facts["module"], f"{label} is not an nn.Module")
            for name in ("W_q", "W_k", "W_v"):
                expect_layer(facts, name, d_in, d_out, bias, label)
            names = sorted(name for name, _ in facts["parameters"])
            expect(names == expected, f"{label} has the parameters {names}, not {expected}")
            # The weights the module really holds (layers may share one), as the hidden test uses them.
            held = effective_params(params, ("W_q", "W_k", "W_v"), facts)
            for what, x_, mask, h in cases:
                ref_out, ref_w = module_reference(held, x_, mask)
                got_out, got_w = pair(r, h, f"{label} on {what}")
                expect(tuple(got_out.shape) == tuple(ref_out.shape), f"{label} on {what}: out has shape {tuple(got_out.shape)}")
                close_torch(got_w, ref_w, atol=1e-5, rtol=1e-5, what=f"{label} on {what}: weights")
                close_torch(got_out, ref_out, atol=1e-5, rtol=1e-5, what=f"{label} on {what}: out")
            expect_shape_error(r, h_error, f"{label} on x of shape {bad_shape}", shapes=(bad_shape,),
                               mentions=(str(d_in),))

    return judge


def test_causal_attention(p):
    randn = p.randn
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
            cases.append((shape, ref_out, ref_w, m.call(x_)))
        errors = [(shape, m.call(randn(*shape))) for shape in [(ctx + 1, d_in), (2, ctx + 3, d_in)]]
        configs.append((label, d_in, d_out, ctx, bias, facts, cases, errors))

    def judge(r):
        facts = r.facts(h_facts, "CausalSelfAttention(6, 3, context_len=8)")
        expect_layer(facts, "qkv", 6, 9, False, "causal_attn")
        names = sorted(name for name, _ in facts["parameters"])
        expect(names == ["qkv.weight"], f"CausalSelfAttention(6, 3, context_len=8) has the parameters {names}")
        expect(any(shape[-2:] == (8, 8) for _, shape in facts["buffers"]), "no (8, 8) buffer holds the causal mask")
        out, w = pair(r, h_x, "causal_attn(x) with 5 tokens")
        expect(tuple(out.shape) == (5, 3) and tuple(w.shape) == (5, 5), "causal_attn(x) has the wrong shapes")
        future = torch.ones(5, 5, dtype=torch.bool).triu(diagonal=1)
        expect(bool(torch.all(w[future] == 0)), "a query gives weight to a later token")
        expect(bool(torch.isclose(w[0, 0], torch.tensor(1.0, dtype=w.dtype))), "query 0 does not give weight 1 to itself")
        expect_rows_sum_to_one(w, "weights")
        out_changed, _ = pair(r, h_changed, "causal_attn(x_changed)")
        close_torch(out_changed[:-1], out[:-1], atol=1e-6, rtol=1e-5,
                    what="changing the last token changed earlier outputs")
        out_b, w_b = pair(r, h_batch, "causal_attn(x_batch)")
        expect(tuple(out_b.shape) == (3, 5, 3) and tuple(w_b.shape) == (3, 5, 5), "causal_attn(x_batch) has the wrong shapes")
        close_torch(out_b[0], out, atol=1e-5, rtol=1e-5, what="sequence 0 of a batch differs from the sequence alone")
        expect_value_error(r, h_too_long, "a sequence of 9 tokens with context_len = 8", mentions=("8", "9"))
        out_silent, _ = pair(r, h_silent, "causal_attn(x) with the value part of qkv zeroed")
        expect(bool(torch.all(out_silent == 0)), "with the value part of qkv zeroed the output is not 0")
        for label, d_in, d_out, ctx, bias, h_facts_m, cases, errors in configs:
            facts = r.facts(h_facts_m, label)
            expect(facts["module"], f"{label} is not an nn.Module")
            expect_layer(facts, "qkv", d_in, 3 * d_out, bias, label)
            names = sorted(name for name, _ in facts["parameters"])
            expected = ["qkv.bias", "qkv.weight"] if bias else ["qkv.weight"]
            expect(names == expected, f"{label} has the parameters {names}, not {expected}")
            expect(any(shape[-2:] == (ctx, ctx) for _, shape in facts["buffers"]),
                   f"{label} has no ({ctx}, {ctx}) buffer for its causal mask")
            for shape, ref_out, ref_w, h in cases:
                got_out, got_w = pair(r, h, f"{label} on x of shape {shape}")
                expect(tuple(got_out.shape) == tuple(ref_out.shape), f"{label} on x of shape {shape}: wrong shape")
                close_torch(got_w, ref_w, atol=1e-5, rtol=1e-5, what=f"{label} on x of shape {shape}: weights")
                close_torch(got_out, ref_out, atol=1e-5, rtol=1e-5, what=f"{label} on x of shape {shape}: out")
            for shape, h in errors:
                expect_value_error(r, h, f"{label} on x of shape {shape}", mentions=(str(ctx), str(shape[-2])))

    return judge


def test_causal_dropout(p):
    randn = p.randn
    seeds = [int(s) for s in p.rng.integers(0, 2**31, size=3)]
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
        eval_cases.append((tuple(inp.shape), causal_reference(inp, w, b, 3), m.call(inp), m.call(inp)))
    m.train()
    m.seed(seeds[1])
    h_train = m.call(x_long)
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
        expect(0.5 in facts["dropout"], f"dropout=0.5 gives the dropout rates {facts['dropout']}")
        out_e1, w_e1 = pair(r, h_e1, "drop_attn(x) in eval() mode")
        out_e2, w_e2 = pair(r, h_e2, "drop_attn(x) in eval() mode, again")
        expect(torch.equal(out_e1, out_e2) and torch.equal(w_e1, w_e2), "in eval() mode two calls differ")
        expect_rows_sum_to_one(w_e1, "the weights in eval() mode")
        out_t, w_t = pair(r, h_t, "drop_attn(x) in train() mode")
        expect(w_t.shape == w_e1.shape, "the weights in train() mode have another shape")
        expect(bool(((w_t == 0) & (w_e1 > 0)).any()), "in train() mode with dropout=0.5 no weight was dropped")
        kept = w_t != 0
        factors = w_t[kept] / w_e1[kept]
        expect(torch.allclose(factors, torch.full_like(factors, 2.0), atol=1e-4, rtol=1e-4),
               "the surviving weights are not scaled by 1 / (1 - p)")
        close_torch(out_t, w_t @ values_visible, atol=1e-5, rtol=1e-5,
                    what="in train() mode out is not the returned weights times the values")

        facts = r.facts(h_facts_m, "CausalSelfAttention(5, 3, context_len=7, dropout=0.2)")
        expect(dropout in facts["dropout"], f"dropout=0.2 gives the dropout rates {facts['dropout']}")
        for shape, (r_out, r_w, _), h1, h2 in eval_cases:
            out, w_ = pair(r, h1, f"eval() mode on x of shape {shape}")
            close_torch(out, r_out, atol=1e-5, rtol=1e-5, what=f"out in eval() mode on x of shape {shape}")
            close_torch(w_, r_w, atol=1e-5, rtol=1e-5, what=f"weights in eval() mode on x of shape {shape}")
            expect(torch.equal(pair(r, h2, "eval() mode, again")[0], out), "eval() mode is not deterministic")
        out_t, w_t = pair(r, h_train, "train() mode with dropout=0.2")
        expect(w_t.shape == ref_w.shape, "the weights in train() mode have the wrong shape")
        dropped = (w_t == 0) & (ref_w > 0)
        expect(bool(dropped.any()), "in train() mode with dropout=0.2 no attention weight was dropped")
        kept = w_t != 0
        close_torch(w_t[kept], ref_w[kept] / (1 - dropout), atol=1e-5, rtol=1e-5,
                    what="the surviving weights are not scaled by 1 / (1 - 0.2)")
        close_torch(out_t, w_t @ ref_v, atol=1e-5, rtol=1e-5,
                    what="in train() mode out is not the returned weights times the values")
        # The hidden test asks for a share in (0.05, 0.45); any share in (0, 0.7) passes here.
        share = dropped.sum().item() / (ref_w > 0).sum().item()
        expect(0 < share < 0.7, f"with dropout=0.2 a share of {share:.2f} of the weights was dropped")
        close_torch(pair(r, h_eval_again, "eval() after train()")[0], ref_out, atol=1e-5, rtol=1e-5,
                    what="after train() and then eval() again, dropout is still on")
        close_torch(pair(r, h_zero, "dropout=0.0 in train() mode")[0], ref_zero, atol=1e-5, rtol=1e-5,
                    what="with dropout=0.0, train() mode changes the output")

    return judge


CHECKS = {
    "test_sdpa": test_sdpa,
    "test_self_attention": test_self_attention,
    "test_causal_attention": test_causal_attention,
    "test_causal_dropout": test_causal_dropout,
}
