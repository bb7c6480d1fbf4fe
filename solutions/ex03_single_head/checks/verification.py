"""The checks of ex03_single_head (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/assignments/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verification/verify.py) runs them outside it on inputs drawn
afresh for every grading run. ``CrossAttention`` is instantiated where the
student's code runs, which reports its structure (layers, parameter names)
as built-in types; the check then copies its own weights into the named
layers and compares the outputs with PyTorch's attention computed with the
same weights. ``single_head_like_torch`` is compared with a real
``nn.MultiheadAttention(E, 1)`` holding the tensors it is given, NaN where
that layer returns NaN. A failed check's message is what the student reads in
the feedback: which function, on what input, how far off and the likely
cause, never the expected values.
"""

import math
import re
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from tools.verification.probes import Fail, close_torch, diagnosis, effective_params, expect, names_shape


def attention_reference(q, k, v, mask=None):
    """PyTorch's output, and its weights (the output when the values are the identity); a query with no
    allowed key (mask: True = may attend) gets zeros, the course's choice, set here."""
    eye = torch.eye(k.shape[-2], dtype=q.dtype).expand(*q.shape[:-2], k.shape[-2], k.shape[-2])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)
        out, weights = torch.where(has_key, out, 0.0), torch.where(has_key, weights, 0.0)
    return out, weights


def matches(got, candidate):
    return (candidate is not None and tuple(got.shape) == tuple(candidate.shape)
            and bool(torch.allclose(got.double(), candidate.double(), atol=1e-4, rtol=1e-3, equal_nan=True)))


def expect_value_error(r, handle, what, shapes=(), alone=(), hint=""):
    """The probe raised a ValueError whose message names every shape of ``shapes`` (by the notebooks'
    rule) and writes every number of ``alone`` as a number of its own."""
    error = r.raised(handle)
    expect(error is not None, f"{what} should raise ValueError, but it returned normally. {hint}".rstrip(),
           cause="no_validation")
    expect(error.is_a("ValueError"),
           f"{what} should raise ValueError, but it raised {error.type}: {error.message[:200]}. {hint}".rstrip(),
           cause="wrong_exception")
    missing = [str(tuple(s)) for s in shapes if not names_shape(error.message, s)]
    missing += [str(n) for n in alone if not re.search(rf"(?<![\w.]){n}(?!\w|\.\d)", error.message)]
    expect(not missing, f"{what} raised ValueError, but its message should name {' and '.join(missing)}. It says: "
                        f"{error.message[:200]}", cause="vague_error")


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


def expect_layer(facts, name, d_in, d_out, bias, label):
    layer = facts["layers"].get(name)
    expect(layer is not None and layer["linear"],
           f"{label}.{name} should be an nn.Linear, but it is {'a ' + layer['type'] if layer else 'missing'}. nn.Linear owns "
           "its weight (and bias) and applies them when called.")
    expect((layer["in_features"], layer["out_features"]) == (d_in, d_out),
           f"{label}.{name} should map {d_in} features to {d_out}; it maps {layer['in_features']} to "
           f"{layer['out_features']}. The queries read x (width d_query); the keys and values read the context "
           "(width d_context).")
    expect(layer["bias"] == bias, f"{label}.{name} {'has no' if bias else 'has a'} bias, but qkv_bias is {bias}: "
                                  "pass bias=qkv_bias to nn.Linear.")


def pair(r, handle, what):
    return r.tensor_pair(handle, what)


def expect_same_shape(got, ref, what):
    expect(tuple(got.shape) == tuple(ref.shape),
           f"{what} should have shape {tuple(ref.shape)}, but it has shape {tuple(got.shape)}.")


def cross_projections(held, x, context):
    q = F.linear(x, held["W_q.weight"], held.get("W_q.bias"))
    k = F.linear(context, held["W_k.weight"], held.get("W_k.bias"))
    v = F.linear(context, held["W_v.weight"], held.get("W_v.bias"))
    return q, k, v


def cross_reference(held, x, context, padding=None):
    """CrossAttention's out and weights: padding (True = padding) hides keys; all-padding rows are zeros."""
    q, k, v = cross_projections(held, x, context)
    allowed = None if padding is None else (~padding).unsqueeze(-2).expand(*q.shape[:-1], k.shape[-2])
    return attention_reference(q, k, v, allowed)


# The likely mistakes these checks name, by code: what the mistake is, and the chapter section that teaches it
# (the instructor's report, instructor/report.md). The codes every check may report are in probes.GENERAL_CAUSES.
CAUSES = {
    "nan_all_padding": ("NaN for a context that is all padding (a softmax of a row of -inf)",
                        "ch04_softmax_masking: Why $-\\infty$ needs no renormalisation"),
    "unscaled": ("scores not divided by sqrt(d_k)", "ch03_scaling: Scaled attention, checked against PyTorch"),
    "scaled_by_wrong_width": ("scores divided by the square root of another width than d_k",
                              "ch03_scaling: A classic bug: dividing by the model width"),
    "padding_inverted": ("the padding mask read the wrong way round",
                         "ch04_softmax_masking: PyTorch's two boolean conventions"),
    "masked_after_softmax": ("weights zeroed after the softmax instead of -inf before it",
                             "ch04_softmax_masking: Why $-\\infty$ needs no renormalisation"),
    "large_negative_fill": ("padding filled with a large negative number instead of -inf",
                            "ch04_softmax_masking: $-\\infty$ or a large negative number?"),
    "padding_ignored": ("the padding mask not applied", "ch04_softmax_masking: Padding masks, and broadcasting over batch and heads"),
    "weights_transposed": ("projections x @ W instead of x @ W.T", "ch02_queries_keys_values: `nn.Linear` is `x @ W.T + b`"),
    "mask_before_scale": ("a float mask added before the division by sqrt(E)",
                          "ch03_scaling: Scaled attention, checked against PyTorch"),
    "nan_zeroed": ("zeros where nn.MultiheadAttention returns NaN", "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "in_proj_bias_ignored": ("the projections made without in_proj_bias",
                             "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "value_projected_after_weighting": ("W_v applied to the weighted context, which gives an all-padding context the "
                                        "value bias instead of zeros", "ch05_single_head: With or without bias"),
}


def cross_cause(got, held, x, context, padding, d_query, d_context):
    """The usual mistakes of CrossAttention's weights, and the one ``got`` matches, in words."""
    q, k, _ = cross_projections(held, x, context)
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    hidden = None if padding is None else padding.unsqueeze(-2).expand(scores.shape)
    if bool(torch.isnan(got).any()):
        return diagnosis("nan_all_padding", "The NaN are in the queries of a context that is all padding: the softmax of a row of -inf is 0/0. "
                "Set such rows to zero with torch.where, which selects (multiplying by 0 keeps the NaN).")

    def softmax(s, hide):
        if hide is None:
            return torch.softmax(s, dim=-1)
        return torch.nan_to_num(torch.softmax(s.masked_fill(hide, float("-inf")), dim=-1), nan=0.0)

    scaled = scores / math.sqrt(d_k)
    candidates = [("unscaled", "They match unscaled scores: divide by sqrt(d_k), the width of the queries and keys.",
                   softmax(scores, hidden))]
    for name, width in (("d_query", d_query), ("d_context", d_context)):
        if width != d_k:
            candidates.append(("scaled_by_wrong_width", f"They match scores divided by sqrt({name}) = sqrt({width}): divide by sqrt(d_k), "
                               f"where d_k = d_out = {d_k} is the width of the queries and keys.",
                               softmax(scores / math.sqrt(width), hidden)))
    if hidden is not None:
        candidates += [
            ("padding_inverted", "They are zero on the real tokens and positive on the padding: here True marks padding, the keys that "
             "must get no weight.", softmax(scaled, ~hidden)),
            ("masked_after_softmax", "No row sums to more than 1, as when weights are set to zero after the softmax. Fill the padding scores "
             "with -inf before the softmax, so that each row shares 1 among the real tokens.",
             torch.softmax(scaled, dim=-1) * ~hidden),
            ("large_negative_fill", "A context that is all padding got equal weights on every token, as with a fill of -1e9: its queries' "
             "weights and outputs should be all zeros.", torch.softmax(scaled.masked_fill(hidden, -1e9), dim=-1)),
            ("padding_ignored", "Every key is allowed in them: use key_padding_mask.", softmax(scaled, None)),
        ]
    for code, text, candidate in candidates:
        if matches(got, candidate):
            return diagnosis(code, text)
    return diagnosis("other", "The scores are W_q(x) W_k(context)^T / sqrt(d_k), with the padding keys of each "
                              "sequence hidden.")


def test_cross_attention(p):
    randn = p.randn
    # The visible test's layer: CrossAttention(4, 6, 3), with the grader's weights.
    visible = p.module("CrossAttention", 4, 6, 3)
    h_facts = visible.facts("W_q", "W_k", "W_v")
    weights = {"W_q.weight": linear_weights(p, 4, 3, False)[0], "W_k.weight": linear_weights(p, 6, 3, False)[0],
               "W_v.weight": linear_weights(p, 6, 3, False)[0]}
    visible.set(weights)
    x, context = randn(2, 3, 4), randn(2, 5, 6)
    padding = torch.tensor([[False, False, False, True, True], [True, True, True, True, True]])
    garbage = context.clone()
    garbage[0, 3:] = randn(2, 6, scale=1000.0)
    h_plain = visible.call(x, context)
    h_padded = visible.call(x, context, key_padding_mask=padding)
    h_garbage = visible.call(x, garbage, key_padding_mask=padding)
    h_single = visible.call(x[0], context[0], key_padding_mask=padding[0])
    h_visible_error = visible.call(x, randn(2, 5, 4))
    h_visible_rules = [("CrossAttention(4, 6, 3) given x (2, 3, 4) and a context of 3 sequences, (3, 5, 6)", (3, 5, 6), 6,
                        visible.call(x, randn(3, 5, 6))),
                       ("CrossAttention(4, 6, 3) given an unbatched x (3, 4) and a batched context (2, 5, 6)", (2, 5, 6),
                        6, visible.call(x[0], context)),
                       ("CrossAttention(4, 6, 3) given a 4-dimensional x (1, 2, 3, 4) and context (1, 2, 5, 6)",
                        (1, 2, 3, 4), 4, visible.call(x[None], context[None]))]

    # The hidden tests' configurations, with the grader's weights and inputs.
    configs = []
    for d_query, d_context, d_out, bias in [(5, 3, 7, True), (8, 8, 2, False), (2, 9, 4, True)]:
        label = f"CrossAttention({d_query}, {d_context}, {d_out}, qkv_bias={bias})"
        m = p.module("CrossAttention", d_query, d_context, d_out, qkv_bias=bias)
        facts = m.facts("W_q", "W_k", "W_v")
        params = {}
        for name, d_in in (("W_q", d_query), ("W_k", d_context), ("W_v", d_context)):
            weight, b = linear_weights(p, d_in, d_out, bias)
            params[f"{name}.weight"] = weight
            if bias:
                params[f"{name}.bias"] = b
        m.set(params)
        m.eval()
        lengths = torch.from_numpy(p.rng.integers(1, 7, size=4))
        lengths[0], lengths[1] = 6, 0                                            # one full, one all padding
        batch_padding = torch.arange(6)[None, :] >= lengths[:, None]             # (B, Tk), True = padding
        context_b = randn(4, 6, d_context)
        context_b[batch_padding] = randn(int(batch_padding.sum()), d_context, scale=300.0)   # huge padding
        one_padding = torch.from_numpy(p.rng.random(7) < 0.4)
        one_padding[int(p.rng.integers(0, 7))] = False                           # at least one real token
        cases = []
        for what, x_, context_, pad in [
            ("a batch of 4 (Tq=5, Tk=6), one context all padding, huge numbers in the padding",
             randn(4, 5, d_query), context_b, batch_padding),
            ("a batch of 2 (Tq=3, Tk=8), no padding mask", randn(2, 3, d_query), randn(2, 8, d_context), None),
            ("one unbatched sequence (Tq=4, Tk=7) with a (Tk,) padding mask", randn(4, d_query), randn(7, d_context),
             one_padding),
            ("one query and one context token", randn(1, 1, d_query), randn(1, 1, d_context),
             torch.zeros(1, 1, dtype=torch.bool)),
            ("a batch of 2 (Tq=6, Tk=2), no token padded", randn(2, 6, d_query), randn(2, 2, d_context),
             torch.zeros(2, 2, dtype=torch.bool)),
        ]:
            cases.append((what, x_, context_, pad, m.call(x_, context_, key_padding_mask=pad)))
        bad = [(f"x of shape (2, 3, {d_query + 1})", (2, 3, d_query + 1), d_query,
                m.call(randn(2, 3, d_query + 1), randn(2, 4, d_context))),
               (f"a context of shape (2, 4, {d_context + 2})", (2, 4, d_context + 2), d_context,
                m.call(randn(2, 3, d_query), randn(2, 4, d_context + 2))),
               (f"a batched x (2, 3, {d_query}) and an unbatched context (4, {d_context})", (4, d_context), d_context,
                m.call(randn(2, 3, d_query), randn(4, d_context))),
               (f"x with 2 sequences and a context with 3, (3, 4, {d_context})", (3, 4, d_context), d_context,
                m.call(randn(2, 3, d_query), randn(3, 4, d_context))),
               (f"an unbatched x (3, {d_query}) and a batched context (2, 4, {d_context})", (2, 4, d_context),
                d_context, m.call(randn(3, d_query), randn(2, 4, d_context))),
               (f"a 4-dimensional x (2, 2, 3, {d_query}) and context (2, 2, 4, {d_context})", (2, 2, 3, d_query),
                d_query, m.call(randn(2, 2, 3, d_query), randn(2, 2, 4, d_context))),
               (f"a 1-dimensional x ({d_query},) and a context (4, {d_context})", (d_query,), d_query,
                m.call(randn(d_query), randn(4, d_context)))]
        expected = sorted(f"{n}.{w}" for n in ("W_q", "W_k", "W_v") for w in (["weight", "bias"] if bias else ["weight"]))
        configs.append((label, d_query, d_context, d_out, bias, facts, expected, params, cases, bad))

    def judge(r):
        facts = r.facts(h_facts, "CrossAttention(4, 6, 3)")
        for name, d_in in (("W_q", 4), ("W_k", 6), ("W_v", 6)):
            expect_layer(facts, name, d_in, 3, False, "CrossAttention(4, 6, 3)")
        held = effective_params(dict(weights), ("W_q", "W_k", "W_v"), facts)
        on = "x (2, 3, 4), context (2, 5, 6)"
        out, w = pair(r, h_plain, f"cross(x, context) with {on}")
        expect_same_shape(out, torch.zeros(2, 3, 3), f"out for {on}")
        expect_same_shape(w, torch.zeros(2, 3, 5), f"weights for {on}")
        ref_out, ref_w = cross_reference(held, x, context)
        close(w, ref_w, atol=1e-5, rtol=1e-5, what="cross(x, context)'s weight matrix", on=on,
              cause=lambda: cross_cause(w, held, x, context, None, 4, 6))
        close_torch(out, ref_out, atol=1e-5, rtol=1e-5, what="cross(x, context)'s out", on=on,
                    cause="out is the weights times the values, W_v(context).")
        out_p, w_p = pair(r, h_padded, "cross(x, context, key_padding_mask=padding) with a (2, 5) padding mask")
        expect_same_shape(w_p, torch.zeros(2, 3, 5), "weights with a (2, 5) padding mask")
        expect(not (bool(torch.all(w_p[0, :, 3:] > 0)) and bool(torch.all(w_p[0, :, :3] == 0))),
               "Your weights are zero on the real tokens of sequence 0 and positive on its padding: the mask is read "
               "the wrong way round. Here True marks padding, the tokens that must get no weight.",
               cause="padding_inverted")
        expect(bool(torch.all(w_p[0, :, 3:] == 0)), "The padding tokens of sequence 0 should get weight exactly 0. "
                                                    "Fill their scores with -inf before the softmax.",
               cause="padding_ignored")
        expect(not bool(torch.isnan(w_p).any()) and not bool(torch.isnan(out_p).any()),
               "Sequence 1 is all padding, and its queries came out NaN: the softmax of a row of -inf is 0/0. Set "
               "such rows to zero with torch.where, which selects (multiplying by 0 keeps the NaN).",
               cause="nan_all_padding")
        expect(bool(torch.all(w_p[1] == 0)) and bool(torch.all(out_p[1] == 0)),
               "Sequence 1 is all padding, so its weights and outputs should be all zeros. If you filled with a "
               "large negative number such as -1e9, its rows became uniform.", cause="large_negative_fill")
        ref_out_p, ref_w_p = cross_reference(held, x, context, padding)
        close(w_p, ref_w_p, atol=1e-5, rtol=1e-5, what="The weight matrix", on="a (2, 5) padding mask",
              cause=lambda: cross_cause(w_p, held, x, context, padding, 4, 6))
        close_torch(out_p, ref_out_p, atol=1e-5, rtol=1e-5, what="out", on="a (2, 5) padding mask")
        out_g, _ = pair(r, h_garbage, "cross(x, garbage, key_padding_mask=padding)")
        close_torch(out_g[0], out_p[0], atol=1e-5, rtol=1e-5, what="out of sequence 0",
                    on="context whose padding holds huge numbers",
                    cause="Padding tokens must get weight exactly 0, whatever they hold.")
        out_1, w_1 = pair(r, h_single, "cross(x[0], context[0], key_padding_mask=padding[0])")
        expect_same_shape(w_1, torch.zeros(3, 5), "weights for one unbatched sequence")
        close_torch(out_1, out_p[0], atol=1e-5, rtol=1e-5, what="out for one unbatched sequence",
                    on="x[0], context[0] and the mask padding[0]", cause="It should equal sequence 0 of the batched call.")
        expect_value_error(r, h_visible_error, "CrossAttention(4, 6, 3) given a context of width 4",
                           shapes=((2, 5, 4),), alone=(6,))
        for what, shape, width, h in h_visible_rules:
            expect_value_error(r, h, what, shapes=(shape,), alone=(width,))
        for label, d_query, d_context, d_out, bias, h_facts_m, expected, params, cases, bad in configs:
            facts = r.facts(h_facts_m, label)
            expect(facts["module"], f"{label} should be an nn.Module.")
            for name, d_in in (("W_q", d_query), ("W_k", d_context), ("W_v", d_context)):
                expect_layer(facts, name, d_in, d_out, bias, label)
            names = sorted(name for name, _ in facts["parameters"])
            expect(names == expected, f"{label} should have the parameters {expected}, not {names}.")
            held = effective_params(params, ("W_q", "W_k", "W_v"), facts)
            for what, x_, context_, pad, h in cases:
                ref_out, ref_w = cross_reference(held, x_, context_, pad)
                got_out, got_w = pair(r, h, f"{label} on {what}")
                expect_same_shape(got_w, ref_w, f"{label}'s weights on {what}")
                expect_same_shape(got_out, ref_out, f"{label}'s out on {what}")
                close(got_w, ref_w, atol=1e-5, rtol=1e-5, what=f"{label}'s weight matrix", on=what,
                      cause=lambda: cross_cause(got_w, held, x_, context_, pad, d_query, d_context)
                      + " (tolerance atol=rtol=1e-5)")
                # W_v applied after the weighting: right wherever a row of weights sums to 1, the bias elsewhere.
                try:
                    after = F.linear(ref_w @ context_, held["W_v.weight"], held.get("W_v.bias"))
                except RuntimeError:  # (a held W_v of another width: the layer checks above name it)
                    after = None
                late_v = (after is not None and got_out.shape == after.shape and got_out.dtype == after.dtype
                          and bool(torch.allclose(got_out, after, atol=1e-5, rtol=1e-5)))
                close_torch(got_out, ref_out, atol=1e-5, rtol=1e-5, what=f"{label}'s out", on=what,
                            cause="out is the weights times the values W_v(context); a context that is all padding "
                                  "gives zeros, not the value bias (tolerance atol=rtol=1e-5).",
                            code="value_projected_after_weighting" if late_v else None)
            for what, shape, width, h in bad:
                expect_value_error(r, h, f"{label} given {what}", shapes=(shape,), alone=(width,),
                                   hint="Check the widths of x and of the context, and that they are batched alike, before you project them.")

    return judge


def torch_reference(query, key, value, stored, attn_mask=None, key_padding_mask=None):
    """What a real nn.MultiheadAttention(E, 1) holding ``stored`` returns (eval mode, need_weights=True)."""
    in_w, in_b, out_w, out_b = stored
    layer = nn.MultiheadAttention(query.shape[-1], 1, bias=in_b is not None).eval()
    with torch.no_grad():
        layer.in_proj_weight.copy_(in_w)
        layer.out_proj.weight.copy_(out_w)
        if in_b is not None:
            layer.in_proj_bias.copy_(in_b)
            layer.out_proj.bias.copy_(out_b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # a float attn_mask with a boolean key_padding_mask is deprecated
            return layer(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask)


def torch_variant(query, key, value, stored, attn_mask=None, key_padding_mask=None, transposed=False,
                  course_masks=False, mask_before_scale=False, zero_empty=False, no_bias=False):
    """The single head with one of the usual slips, for naming a likely cause."""
    in_w, in_b, out_w, out_b = stored
    E = query.shape[-1]
    ws = in_w.chunk(3)
    bs = (None, None, None) if in_b is None or no_bias else in_b.chunk(3)
    if transposed:
        ws = [w.T for w in ws]
    q, k, v = (F.linear(t.transpose(0, 1), w, b) for t, w, b in zip((query, key, value), ws, bs))
    scores = q @ k.transpose(1, 2)
    if attn_mask is not None and attn_mask.dtype != torch.bool and mask_before_scale:
        scores = scores + attn_mask
    scores = scores / math.sqrt(E)
    hidden = torch.zeros(scores.shape, dtype=torch.bool)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            hidden = hidden | (~attn_mask if course_masks else attn_mask)
        elif not mask_before_scale:
            scores = scores + attn_mask
    if key_padding_mask is not None:
        hidden = hidden | (~key_padding_mask if course_masks else key_padding_mask)[:, None, :]
    weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
    if zero_empty:
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights


def torch_cause(got, *args, **masks):
    """The usual slips of single_head_like_torch, and the one ``got`` matches, in words."""
    candidates = [
        ("weights_transposed", "They match projections x @ W instead of x @ W.T: the stored weights are in nn.Linear's (out, in) layout.",
         dict(transposed=True)),
        ("padding_inverted", "They match masks read as chapter 5 reads them: in nn.MultiheadAttention a boolean True means 'may not "
         "attend' (attn_mask) or 'padding' (key_padding_mask).", dict(course_masks=True)),
        ("mask_before_scale", "They match a float attn_mask added before the division by sqrt(E): the layer adds it to the scaled scores.",
         dict(mask_before_scale=True)),
        ("nan_zeroed", "They are zeros where nn.MultiheadAttention returns NaN, for a query with no key it may attend to: that is "
         "the course's choice, not this layer's.", dict(zero_empty=True)),
        ("in_proj_bias_ignored", "They match projections without in_proj_bias: each projection adds its third of it.",
         dict(no_bias=True)),
    ]
    for code, text, slip in candidates:
        if matches(got, torch_variant(*args, **masks, **slip)):
            return diagnosis(code, text)
    return diagnosis("other", "Split in_proj_weight into queries, keys, values (in that order), scale by sqrt(E), "
                              "then apply the masks.")


def compare_nan(got, ref, what, on, cause=lambda: ""):
    """Equal to the layer's result, with NaN exactly where it has NaN."""
    expect_same_shape(got, ref, f"{what} on {on}")
    expect(torch.equal(got.isnan(), ref.isnan()),
           f"{what} on {on} should be NaN exactly where nn.MultiheadAttention's is: {int(ref.isnan().sum())} entries "
           f"there, {int(got.isnan().sum())} in yours. A query with no key it may attend to is NaN in this layer; every "
           f"other query is not. {cause()}".rstrip())
    close(got.nan_to_num(), ref.nan_to_num(), atol=1e-5, rtol=1e-5, what=what, on=on, cause=cause)


def stored_tensors(p, E, bias):
    """in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias, drawn as nn.MultiheadAttention draws them."""
    bound = math.sqrt(6 / (E + 3 * E))                       # xavier_uniform_ of a (3E, E) matrix
    in_w = (torch.rand(3 * E, E, generator=p.gen) * 2 - 1) * bound
    out_w, out_b = linear_weights(p, E, E, bias)
    in_b = torch.randn(3 * E, generator=p.gen) * 0.1 if bias else None
    return in_w, in_b, out_w, out_b


def test_like_torch(p):
    randn = p.randn
    # The visible test's example, with the grader's weights.
    stored = stored_tensors(p, 6, True)
    query, key, value = randn(3, 2, 6), randn(5, 2, 6), randn(5, 2, 6)
    forbidden = torch.tensor([[False, True, False, True, False],
                              [True, False, False, False, True],
                              [False, False, True, True, False]])
    bonus = torch.tensor([[0.0, 2.0, -1.0, 0.0, float("-inf")]]).expand(3, 5).contiguous()
    padding = torch.tensor([[False, False, False, True, True], [True, True, True, True, True]])
    cases = []

    def compare(label, query, key, value, stored, **masks):
        handle = p.call("single_head_like_torch", query, key, value, *stored, **masks)
        ref = torch_reference(query, key, value, stored, **masks)
        cases.append((label, (query, key, value, stored), masks, ref, handle))

    compare("query (3, 2, 6), key (5, 2, 6), no mask", query, key, value, stored)
    compare("a boolean (3, 5) attn_mask", query, key, value, stored, attn_mask=forbidden)
    compare("a float (3, 5) attn_mask", query, key, value, stored, attn_mask=bonus)
    compare("a (2, 5) key_padding_mask, sequence 1 all padding", query, key, value, stored, key_padding_mask=padding)

    # The hidden tests' kinds of input, with fresh numbers.
    for E, bias, B, Tq, Tk in [(5, True, 3, 4, 7), (8, False, 2, 6, 3), (3, True, 1, 1, 2)]:
        stored_ = stored_tensors(p, E, bias)
        q_, k_, v_ = randn(Tq, B, E), randn(Tk, B, E), randn(Tk, B, E)
        label = f"E={E}, bias={bias}, query ({Tq}, {B}, {E}), key ({Tk}, {B}, {E})"
        bool_mask = torch.from_numpy(p.rng.random((Tq, Tk)) < 0.35)
        bool_mask[0] = True                                       # query 0 may attend to nothing
        float_mask = randn(Tq, Tk, scale=3.0)
        float_mask[torch.from_numpy(p.rng.random((Tq, Tk)) < 0.3)] = float("-inf")
        float_mask[-1] = float("-inf")                            # the last query: nothing
        pad = torch.from_numpy(p.rng.random((B, Tk)) < 0.3)
        pad[0] = True                                             # sequence 0: all padding
        if B > 1:
            pad[1] = False
        compare(f"{label}, no mask", q_, k_, v_, stored_)
        compare(f"{label}, a boolean attn_mask", q_, k_, v_, stored_, attn_mask=bool_mask)
        compare(f"{label}, a float attn_mask", q_, k_, v_, stored_, attn_mask=float_mask)
        compare(f"{label}, a key_padding_mask", q_, k_, v_, stored_, key_padding_mask=pad)
        compare(f"{label}, a boolean attn_mask and a key_padding_mask", q_, k_, v_, stored_,
                attn_mask=torch.from_numpy(p.rng.random((Tq, Tk)) < 0.3), key_padding_mask=pad)
        compare(f"{label}, a float attn_mask and a key_padding_mask", q_, k_, v_, stored_,
                attn_mask=randn(Tq, Tk, scale=2.0), key_padding_mask=pad)

    def judge(r):
        for label, args, masks, (ref_out, ref_w), h in cases:
            out, w = pair(r, h, f"single_head_like_torch on {label}")
            compare_nan(w, ref_w, "The weight matrix", label, cause=lambda: torch_cause(w, *args, **masks))
            compare_nan(out, ref_out, "out", label,
                        cause=lambda: "out is the weighted values projected by out_proj, in the (Tq, B, E) layout.")

    return judge


CHECKS = {
    "test_cross_attention": test_cross_attention,
    "test_like_torch": test_like_torch,
}
