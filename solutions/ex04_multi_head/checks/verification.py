"""The checks of ex04_multi_head (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run.

``split_heads`` and ``merge_heads`` are called on random inputs of the
hidden tests' shapes and compared exactly. ``MultiHeadAttention`` is
instantiated next to the student's code, which reports its structure as
built-in types; the grader copies its own weights into ``W_q``, ``W_k``,
``W_v`` and ``W_o`` and compares the outputs with ``torch.nn.MultiheadAttention``
carrying the same weights, to within atol = rtol = 1e-5. Where a mask leaves
a query no key at all, the reference is computed from the definition
(``reference_blocked``): all-zero weights, and zeros from every head; it does
not depend on how a PyTorch version treats such rows. Error messages are
checked on the hidden tests' own bad inputs.

A failed check's message is what the student reads in the feedback: which
function, on what input, how far off and the likely cause (found by comparing
the answer with what the usual mistakes would give: ``by_definition``), never
the expected numbers.
"""

import math
import re
import warnings

import torch

from tools.verification.probes import (Array, BadResult, Facts, Fail, Transposed, as_tensor, close_torch, describe,
                                       effective_params, expect, names_shape)

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


# --- reading what came back, in the words of the notebook's tests ------------------------------------------------


def returned(r, handle, what, hint=""):
    """What the probe returned; a Fail that names the exception if it raised."""
    error = r.raised(handle)
    if error is not None:
        if "view size is not compatible" in error.message and VIEW_AFTER_TRANSPOSE not in hint:
            hint = f"{VIEW_AFTER_TRANSPOSE} {hint}"
        raise Fail(f"{what} raised {error.type}: {error.message[:300].rstrip().rstrip('.')}. {hint}".rstrip())
    return r.value(handle, what)


def tensor_of(r, handle, what, hint=""):
    value = returned(r, handle, what, hint)
    if not (isinstance(value, Array) and value.kind == "Tensor"):
        raise Fail(f"{what} should return a torch.Tensor, but it returned {describe(value)}.")
    return as_tensor(value, what)


def pair_of(r, handle, what, hint=""):
    """(out, weights) returned by a call of the layer, as tensors."""
    value = returned(r, handle, what, hint)
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise Fail(f"forward should return a pair (out, weights), but {what} returned {describe(value)}.")
    for name, item in zip(("out", "weights"), value):
        if not (isinstance(item, Array) and item.kind == "Tensor"):
            raise Fail(f"The {name} that {what} returned should be a torch.Tensor, but it is {describe(item)}.")
    return as_tensor(value[0], what), as_tensor(value[1], what)


def facts_of(r, handle, what):
    """The structure of the student's layer (tools/verification/harness.py, Harness.facts)."""
    value = returned(r, handle, what)
    if not isinstance(value, Facts):
        raise BadResult(f"{what}: no facts came back")
    return value.facts


def expect_raises(r, handle, what, *, why, fix, numbers=(), shape=None, naming=""):
    """The probe must raise a ValueError whose message names each of ``numbers``
    (as whole words) and ``shape`` (by the notebooks' rule)."""
    error = r.raised(handle)
    expect(error is not None, f"{what} should raise ValueError: {why}.")
    expect(error.is_a("ValueError"), f"{what} raised {error.type} ({error.message[:200].rstrip()}). {fix}")
    named = all(re.search(rf"\b{n}\b", error.message) for n in numbers)
    named = named and (shape is None or names_shape(error.message, shape))
    expect(named, f"{what} raised ValueError, but its message should name {naming}. It says: "
                  f"{error.message[:200].rstrip()}")


def expect_same_shape(name, got, shape, hint=""):
    expect(tuple(got.shape) == tuple(shape),
           f"{name} should have shape {tuple(shape)}, not {tuple(got.shape)}. {hint}".rstrip())


AVERAGED = ("They look averaged over the heads. Return one (Tq, Tk) matrix per head, of shape (B, H, Tq, Tk), not their "
            "average.")


def weights_shape_hint(weights, shape):
    B, H, Tq, Tk = shape
    return AVERAGED if tuple(weights.shape) == (B, Tq, Tk) else ""


# --- split_heads and merge_heads ----------------------------------------------------------------------------------


def labelled(B, T, D):
    """A (B, T, D) tensor whose entry [b, t, f] is 100 b + 10 t + f (the notebook's helper)."""
    b = torch.arange(B).view(B, 1, 1)
    t = torch.arange(T).view(1, T, 1)
    f = torch.arange(D).view(1, 1, D)
    return (100 * b + 10 * t + f).float()


def reference_split(x, num_heads):
    B, T, D = x.shape
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def reference_merge(x):
    B, H, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d)


def by_slicing(x, num_heads):
    """(B, T, D) -> (B, H, T, d), cut by slicing: the heads a correct split_heads gives."""
    d = x.shape[-1] // num_heads
    return torch.stack([x[..., h * d:(h + 1) * d] for h in range(num_heads)], dim=1)


def split_cause(got, x, num_heads):
    """What split_heads got wrong, if its answer is what a usual mistake gives."""
    B, T, D = x.shape
    d = D // num_heads
    if tuple(got.shape) != (B, num_heads, T, d) or got.dtype != x.dtype:
        return ""
    if torch.equal(got, x.reshape(B, num_heads, T, d)):
        return ("The rows of a head are not the tokens in order. A view straight to (B, H, T, d) has this shape but "
                "the wrong contents: cut the features with a view to (B, T, H, d), then swap the T and H axes.")
    if torch.equal(got, x.reshape(B, T, d, num_heads).permute(0, 3, 1, 2)):
        return ("The features of a head are not one consecutive chunk: head h owns features h*d .. (h+1)*d - 1. Did "
                "you cut the last axis as (d, H) instead of (H, d)?")
    return ""


def merge_cause(got, x):
    """What merge_heads got wrong, if its answer is what a usual mistake gives."""
    B, H, T, d = x.shape
    if tuple(got.shape) != (B, T, H * d) or got.dtype != x.dtype:
        return ""
    if torch.equal(got, x.reshape(B, T, H * d)):
        return ("Row t mixes different tokens: moving the head axis next to the feature axis, (B, H, T, d) -> "
                "(B, T, H, d), must come before merging the last two axes.")
    if torch.equal(got, x.permute(0, 2, 3, 1).reshape(B, T, H * d)):
        return "The token is right but the heads are interleaved: head 0's d features come first, then head 1's."
    return ""


VIEW_AFTER_TRANSPOSE = ("After a transpose the numbers are no longer stored in the order of the new axes, so view "
                        "cannot merge two of them; reshape copies when it has to.")


# --- the layer -----------------------------------------------------------------------------------------------------


def layer_weights(p, embed_dim, bias):
    """Weights for the four projections, drawn as nn.Linear would draw them."""
    bound = 1 / math.sqrt(embed_dim)
    params = {}
    for name in PROJECTIONS:
        params[f"{name}.weight"] = (torch.rand(embed_dim, embed_dim, generator=p.gen) * 2 - 1) * bound
        if bias:
            params[f"{name}.bias"] = (torch.rand(embed_dim, generator=p.gen) * 2 - 1) * bound
    return params


def reference_mha(params, embed_dim, num_heads, bias, query, key, value, **kwargs):
    """torch.nn.MultiheadAttention carrying ``params``: out and per-head weights."""
    mha = torch.nn.MultiheadAttention(embed_dim, num_heads, bias=bias, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([params[f"{n}.weight"] for n in ("W_q", "W_k", "W_v")]))
        mha.out_proj.weight.copy_(params["W_o.weight"])
        if bias:
            mha.in_proj_bias.copy_(torch.cat([params[f"{n}.bias"] for n in ("W_q", "W_k", "W_v")]))
            mha.out_proj.bias.copy_(params["W_o.bias"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return mha(query, key, value, need_weights=True, average_attn_weights=False, **kwargs)


def reference_blocked(params, embed_dim, num_heads, bias, query, key, value, mask):
    """Multi-head attention from its definition, head by head, in float64: head
    h uses rows h*d .. (h+1)*d - 1 of W_q, W_k and W_v, and a query with no
    allowed key gets zero weights. Returns out and per-head weights as float32."""

    def project(x, name):
        y = x.double() @ params[f"{name}.weight"].double().T
        return y + params[f"{name}.bias"].double() if bias else y

    B, Tq, D = query.shape
    Tk, d = key.shape[1], D // num_heads
    q, k, v = project(query, "W_q"), project(key, "W_k"), project(value, "W_v")
    mask = mask.expand(B, num_heads, Tq, Tk)
    weights = torch.zeros(B, num_heads, Tq, Tk, dtype=torch.float64)
    heads = torch.zeros(B, Tq, D, dtype=torch.float64)
    for b in range(B):
        for h in range(num_heads):
            f = slice(h * d, (h + 1) * d)
            for i in range(Tq):
                allowed = mask[b, h, i]
                if allowed.any():
                    weights[b, h, i, allowed] = torch.softmax(k[b, allowed, f] @ q[b, i, f] / math.sqrt(d), dim=0)
            heads[b, :, f] = weights[b, h] @ v[b, :, f]
    return project(heads, "W_o").float(), weights.float()


def by_definition(params, num_heads, bias, query, key, value, mask=None, *, scale="sqrt(head_dim)",
                  keys_with="W_k", use_mask="before softmax", softmax_over=-1, split="chunks", merge="side by side",
                  project_out=True):
    """Multi-head attention in float64, right or with one of the usual mistakes
    (the keyword arguments): what a wrong answer is compared with to name its cause."""

    def project(x, name):
        y = x.double() @ params[f"{name}.weight"].double().T
        return y + params[f"{name}.bias"].double() if bias else y

    def heads(y):  # (B, T, D) -> (B, H, T, d)
        B, T, D = y.shape
        if split == "chunks":
            return y.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)
        if split == "view":
            return y.reshape(B, num_heads, T, D // num_heads)
        return y.reshape(B, T, D // num_heads, num_heads).permute(0, 3, 1, 2)

    D = query.shape[-1]
    d = D // num_heads
    q, k, v = heads(project(query, "W_q")), heads(project(key, keys_with)), heads(project(value, "W_v"))
    divisor = {"sqrt(head_dim)": math.sqrt(d), "sqrt(embed_dim)": math.sqrt(D), "1": 1.0, "head_dim / 2": d / 2}[scale]
    scores = q @ k.transpose(-2, -1) / divisor  # (B, H, Tq, Tk)
    if mask is not None and use_mask == "repeated":
        # Folded into (B*H, Tq, Tk) with repeat: sequence b, head h gets the mask of sequence (b*H + h) % B.
        B, H = scores.shape[:2]
        full = mask.expand(B, 1, *scores.shape[2:])
        mask = torch.stack([torch.stack([full[(b * H + h) % B, 0] for h in range(H)]) for b in range(B)])
    if mask is not None and use_mask in ("before softmax", "inverted", "repeated"):
        allowed = ~mask if use_mask == "inverted" else mask
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=softmax_over)
    if mask is not None and use_mask in ("before softmax", "repeated"):
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
    if mask is not None and use_mask == "after softmax":
        weights = weights.masked_fill(~mask, 0.0)
    outputs = weights @ v  # (B, H, Tq, d)
    B, H, Tq, _ = outputs.shape
    if merge == "side by side":
        merged_heads = outputs.transpose(1, 2).reshape(B, Tq, D)
    else:
        merged_heads = outputs.reshape(B, Tq, D)
    out = project(merged_heads, "W_o") if project_out else merged_heads
    return out, weights


# What the usual mistakes would give, and what to say when the answer matches one.
WEIGHT_MISTAKES = [
    ({"scale": "sqrt(embed_dim)"}, "They match scores divided by sqrt(embed_dim): each head's dot products run over "
                                   "head_dim features, so divide by sqrt(head_dim)."),
    ({"scale": "1"}, "They match unscaled scores: divide the scores by sqrt(head_dim)."),
    ({"scale": "head_dim / 2"}, "They match scores divided by head_dim / 2. Python reads head_dim ** 1/2 as "
                                "(head_dim ** 1) / 2: write head_dim ** 0.5, or math.sqrt(head_dim)."),
    ({"keys_with": "W_q"}, "They match keys projected with W_q: project the keys with W_k."),
    ({"swap": True}, "They match scores computed from the values: the scores come from the queries and W_k(key), "
                     "the output from W_v(value)."),
    ({"softmax_over": -2}, "They match a softmax over the queries: take it over the keys (the last axis)."),
    ({"split": "view"}, "They match heads cut with a view straight to (B, H, T, d), whose rows are not the tokens in "
                        "order: view W_q(query) and W_k(key) as (B, T, H, d), then swap the T and H axes."),
    ({"split": "interleaved"}, "They match heads whose features are not one consecutive chunk: head h owns features "
                               "h*d .. (h+1)*d - 1 of W_q(query) and W_k(key), cut as (H, d), not (d, H)."),
    ({"use_mask": "ignored"}, "They match attention without the mask: set the scores to -inf where the mask is "
                              "False."),
    ({"use_mask": "inverted"}, "They match the mask read the wrong way round: True means 'may attend', so set the "
                               "scores to -inf where the mask is False."),
    ({"use_mask": "repeated"}, "They match each sequence's mask reaching the heads of other sequences, as when a "
                               "(B, 1, Tq, Tk) mask is copied with repeat into (B*H, Tq, Tk): let it broadcast "
                               "against (B, H, Tq, Tk) instead."),
    ({"use_mask": "after softmax"}, "They match weights zeroed after a softmax over all the keys, so that a row no "
                                    "longer sums to 1: mask the scores before the softmax."),
]
OUT_MISTAKES = [
    ({"merge": "flat"}, "It matches the heads' outputs reshaped from (B, H, T, d) straight to (B, T, D), which mixes "
                        "tokens. The head axis must move next to the features, (B, H, T, d) -> (B, T, H, d), before "
                        "the last two axes are merged: in merge_heads, and in forward if it merges the heads itself."),
    ({"project_out": False}, "It matches the merged heads without the output projection: apply W_o to the merged "
                             "heads, as the last step."),
    ({"swap": True}, "It matches attention whose values come from the key argument: the output is a weighted "
                     "average of W_v(value)."),
]


def likely_cause(got, which, params, num_heads, bias, query, key, value, mask):
    """The cause to name when ``got`` (out or weights) matches what one of the usual mistakes gives."""
    for mistake, cause in WEIGHT_MISTAKES if which == "weights" else OUT_MISTAKES:
        mistake = dict(mistake)
        if mistake.get("use_mask") and (mask is None or mistake["use_mask"] == "repeated" and mask.dim() == 4
                                        and mask.shape[1] != 1):
            continue
        k, v = (value, key) if mistake.pop("swap", False) else (key, value)
        out, weights = by_definition(params, num_heads, bias, query, k, v, mask, **mistake)
        wrong = weights if which == "weights" else out
        if tuple(got.shape) == tuple(wrong.shape) and any(
                torch.allclose(got.double(), w, atol=1e-4, rtol=1e-4, equal_nan=True) for w in (wrong, wrong.nan_to_num())):
            return cause
    return ""


def weights_sum_to_one(weights, what):
    """Each query's weights over the keys sum to 1."""
    sums = weights.sum(dim=-1)
    if torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return
    columns = weights.sum(dim=-2)
    cause = ("The columns sum to 1 instead: take the softmax over the keys (the last axis)."
             if torch.allclose(columns, torch.ones_like(columns), atol=1e-5) else
             "Did you zero the weights after the softmax? Mask the scores before it." if sums.max() <= 1 + 1e-5 else
             "Is the softmax taken over the keys (the last axis)?")
    raise Fail(f"Each query's weights over the keys should sum to 1 {what}; here the sums range from "
               f"{sums.min():.3g} to {sums.max():.3g}. {cause}")


class Comparisons:
    """Layers with the grader's weights, run on random inputs, against nn.MultiheadAttention
    (or, with ``blocked=True``, against ``reference_blocked``).

    The reference uses the weights the layer really holds after they were
    copied in (see ``effective_params``), as a test would use the layer's own weights."""

    def __init__(self, p, blocked=False):
        self.p = p
        self.blocked = blocked
        self.cases = []

    def add(self, label, *, embed_dim, num_heads, B, Tq, Tk=None, bias=True, mask=None, **mha_kwargs):
        p = self.p
        params = layer_weights(p, embed_dim, bias)
        query = p.randn(B, Tq, embed_dim, scale=2)
        if Tk is None:
            key = value = query
        else:
            key, value = p.randn(B, Tk, embed_dim, scale=2), p.randn(B, Tk, embed_dim)
        layer = p.module("MultiHeadAttention", embed_dim, num_heads, bias=bias)
        facts = layer.facts(*PROJECTIONS)
        placed = layer.set(params)
        layer.eval()
        handle = layer.call(query, key, value, mask=mask)
        references = {}

        def reference(layer_facts):
            held = effective_params(params, PROJECTIONS, layer_facts)
            shape = (tuple(layer_facts["shared"]), tuple(layer_facts["bias_shared"]))
            if shape not in references:
                if self.blocked:
                    references[shape] = reference_blocked(held, embed_dim, num_heads, bias, query, key, value, mask)
                else:
                    references[shape] = reference_mha(held, embed_dim, num_heads, bias, query, key, value,
                                                      **mha_kwargs)
            return held, references[shape]

        size = f"B={B}, Tq={Tq}, Tk={Tq if Tk is None else Tk}, D={embed_dim}, H={num_heads}, bias={bias}"
        inputs = (num_heads, bias, query, key, value, mask)
        self.cases.append((f"{label} ({size})", f"MultiHeadAttention({embed_dim}, {num_heads}, bias={bias})", bias,
                           facts, placed, reference, handle, inputs, (B, num_heads, Tq, Tq if Tk is None else Tk)))

    def judge(self, r, same_lengths_work=False):
        """Fail on the first case that differs from its reference. ``same_lengths_work``: the
        layer is known to work with as many queries as keys (a hint, should it fail when they differ)."""
        against = ("multi-head attention computed from its definition" if self.blocked else
                   "nn.MultiheadAttention carrying the same weights")
        for label, layer, bias, facts, placed, reference, handle, inputs, shape in self.cases:
            B, H, Tq, Tk = shape
            lengths = (f"It works with as many queries as keys, and here they differ (Tq={Tq}, Tk={Tk}): take each "
                       "tensor's length from that tensor." if Tq != Tk and same_lengths_work else "")
            out, weights = pair_of(r, handle, f"{layer} on {label}", lengths)
            same_lengths_work = same_lengths_work or Tq == Tk
            error = r.raised(placed)
            expect(error is None, f"The grader could not give {layer} its own weights ({error}). The layer needs W_q, "
                                  "W_k, W_v and W_o, each an nn.Linear(embed_dim, embed_dim, bias=bias).")
            layer_facts = facts_of(r, facts, layer)
            held, (ref_out, ref_w) = reference(layer_facts)
            expect_same_shape(f"The weights of {layer} on {label}", weights, ref_w.shape,
                              weights_shape_hint(weights, shape))
            if self.blocked:
                expect(not (torch.isnan(weights).any() or torch.isnan(out).any()),
                       f"The weights or out of {layer} contain NaN on {label}. A query with no allowed key should "
                       "get zero weights, and every head should output zeros for it: set the rows whose mask allows "
                       "no key to 0 with torch.where (multiplying by 0 keeps a NaN, since NaN * 0 is NaN).")
            extra = ""
            projection = layer_facts["layers"]["W_q"]
            if projection["linear"] and projection["bias"] != bias:
                extra = (" With bias=False the projections should have no bias: pass bias=bias on to nn.Linear."
                         if not bias else " With bias=True every projection should have a bias.")
            for which, got, ref in (("weights", weights, ref_w), ("out", out, ref_out)):
                note = f" Compared with {against}, to within atol = rtol = 1e-5.{extra}"
                try:
                    close_torch(got, ref, atol=1e-5, rtol=1e-5, what=f"The {which} tensor of MultiHeadAttention",
                                on=label, cause=note.strip())
                except Fail:
                    cause = likely_cause(got, which, held, *inputs) if got.dtype == ref.dtype else ""
                    close_torch(got, ref, atol=1e-5, rtol=1e-5, what=f"The {which} tensor of MultiHeadAttention",
                                on=label, cause=f"{cause}{note}".strip())


def test_split_heads(p):
    x_visible = labelled(1, 4, 6)
    h_visible = p.call("split_heads", x_visible, 2)
    h_error_width = p.call("split_heads", torch.zeros(1, 4, 10), 4)
    h_error_2d = p.call("split_heads", torch.zeros(4, 6), 2)
    cases = []
    for B, T, D, H in [(3, 5, 12, 1), (3, 5, 12, 2), (3, 5, 12, 3), (2, 7, 12, 4), (2, 6, 12, 6),
                       (1, 3, 8, 8), (4, 2, 20, 5), (2, 9, 6, 3)]:
        x = p.randn(B, T, D)
        cases.append((f"a random ({B}, {T}, {D}) input with {H} heads", x, H, p.call("split_heads", x, H, after=(0,))))
    x_labelled = labelled(3, 6, 8)
    h_labelled = p.call("split_heads", x_labelled, 4)
    errors = [((2, 3, 14), 4), ((1, 5, 9), 2)]
    h_errors = [(shape, H, p.call("split_heads", torch.zeros(*shape), H)) for shape, H in errors]
    h_error_4d = p.call("split_heads", torch.zeros(2, 3, 4, 8), 2)

    def judge(r):
        got = tensor_of(r, h_visible, "split_heads(x, 2)")
        expect_same_shape("split_heads(x, 2) for x of shape (1, 4, 6)", got, (1, 2, 4, 3))
        close_torch(got, reference_split(x_visible, 2), atol=0, rtol=0, what="split_heads(x, 2)",
                    on="x = labelled(1, 4, 6) (compared exactly)", cause=split_cause(got, x_visible, 2))
        fix = "Check the width yourself, before reshaping, and raise a ValueError that names D and num_heads."
        expect_raises(r, h_error_width, "split_heads(x, 4) with D = 10", numbers=(10, 4),
                      why="10 features do not split into 4 equal heads", fix=fix, naming="D = 10 and num_heads = 4")
        expect_raises(r, h_error_2d, "split_heads on a 2-D tensor of shape (4, 6)", shape=(4, 6),
                      why="it expects (B, T, D)", naming="the shape it got, (4, 6)",
                      fix="Check x.dim() first and raise a ValueError that names the shape.")
        for on, x, H, h in cases:
            got = tensor_of(r, h, f"split_heads(x, {H}) on {on}")
            B, T, D = x.shape
            expect_same_shape(f"split_heads(x, {H}) for x of shape {(B, T, D)}", got, (B, H, T, D // H))
            close_torch(got, reference_split(x, H), atol=0, rtol=0, what=f"split_heads(x, {H})",
                        on=f"{on} (compared exactly)", cause=split_cause(got, x, H))
            expect(torch.equal(as_tensor(r.after(h, 0), "x"), x),
                   f"split_heads(x, {H}) changed its input x ({on}). The caller may still need it: return a new view "
                   "of x instead of writing into it.")
        got = tensor_of(r, h_labelled, "split_heads(x, 4)")
        close_torch(got, reference_split(x_labelled, 4), atol=0, rtol=0, what="split_heads(x, 4)",
                    on="x = labelled(3, 6, 8), whose entries read 100*sequence + 10*token + feature (compared exactly)",
                    cause=split_cause(got, x_labelled, 4) or "split_heads puts the numbers in the wrong places.")
        for shape, H, h in h_errors:
            D = shape[-1]
            expect_raises(r, h, f"split_heads(x, {H}) with D = {D}", numbers=(D, H), fix=fix,
                          why=f"{D} features do not split into {H} equal heads", naming=f"D = {D} and num_heads = {H}")
        expect_raises(r, h_error_4d, "split_heads on a 4-D tensor of shape (2, 3, 4, 8)", shape=(2, 3, 4, 8),
                      why="it expects (B, T, D)", naming="the shape it got, (2, 3, 4, 8)",
                      fix="Check x.dim() first and raise a ValueError that names the shape.")

    return judge


def test_merge_heads(p):
    heads = torch.stack([labelled(1, 4, 3)[0] + 100 * h for h in range(2)])[None]  # (1, 2, 4, 3)
    h_visible = p.call("merge_heads", heads)
    x_round = labelled(2, 5, 6)
    h_round_visible = p.call("merge_heads", by_slicing(x_round, 3))
    cases = []
    for B, H, T, d in [(3, 1, 5, 4), (3, 2, 5, 3), (2, 4, 6, 2), (1, 8, 3, 1), (2, 3, 7, 5)]:
        x = p.randn(B, H, T, d)
        cases.append((f"a random ({B}, {H}, {T}, {d}) input", x, p.call("merge_heads", x)))
    # (B, H, T, d) = (2, 4, 6, 3), laid out in memory as (2, 6, 4, 3): the heads' outputs of a transpose.
    x_strided = p.randn(2, 6, 4, 3).transpose(1, 2).contiguous()
    h_strided = p.call("merge_heads", Transposed(x_strided, (1, 2)))
    x_round2 = p.randn(3, 7, 12)
    h_round = p.call("merge_heads", by_slicing(x_round2, 4))

    def judge(r):
        got = tensor_of(r, h_visible, "merge_heads on a (1, 2, 4, 3) tensor")
        expect_same_shape("merge_heads(heads) for heads of shape (1, 2, 4, 3)", got, (1, 4, 6))
        close_torch(got, reference_merge(heads), atol=0, rtol=0, what="merge_heads(heads)",
                    on="the visible example, whose entries read 100*head + 10*token + feature (compared exactly)",
                    cause=merge_cause(got, heads))
        got = tensor_of(r, h_round_visible, "merge_heads on a (2, 3, 5, 2) tensor")
        close_torch(got, x_round, atol=0, rtol=0, what="merge_heads(by_hand)",
                    on="3 heads of width 2 cut from x = labelled(2, 5, 6) by slicing, which should give back x exactly",
                    cause=merge_cause(got, by_slicing(x_round, 3))
                    or "Features 2h, 2h + 1 of token t come from head h's row t.")
        for on, x, h in cases:
            got = tensor_of(r, h, f"merge_heads on {on}")
            B, H, T, d = x.shape
            expect_same_shape(f"merge_heads(x) for x of shape {(B, H, T, d)}", got, (B, T, H * d))
            close_torch(got, reference_merge(x), atol=0, rtol=0, what="merge_heads(x)", on=f"{on} (compared exactly)",
                        cause=merge_cause(got, x))
        got = tensor_of(r, h_strided, "merge_heads on a (2, 4, 6, 3) input that is not contiguous in memory")
        close_torch(got, reference_merge(x_strided), atol=0, rtol=0, what="merge_heads(x)",
                    on="a (2, 4, 6, 3) input that is not contiguous in memory (compared exactly)",
                    cause=merge_cause(got, x_strided) or "The heads' outputs may arrive laid out in any order in memory: "
                                                         "index them by their axes, not by their storage.")
        got = tensor_of(r, h_round, "merge_heads on a (3, 4, 7, 3) tensor")
        close_torch(got, x_round2, atol=0, rtol=0, what="merge_heads(heads)",
                    on="the 4 heads of a random x of shape (3, 7, 12), cut by slicing, which should give back x exactly",
                    cause=merge_cause(got, by_slicing(x_round2, 4)))

    return judge


def test_init(p):
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    h_facts = layer.facts(*PROJECTIONS)
    h_no_bias = p.module("MultiHeadAttention", embed_dim=8, num_heads=2, bias=False).facts(*PROJECTIONS)
    h_errors = [(E, H, p.module("MultiHeadAttention", E, H).created) for E, H in [(10, 3), (12, 5), (7, 2), (6, 4)]]
    configs = [(E, H, bias, p.module("MultiHeadAttention", E, H, bias=bias).facts(*PROJECTIONS))
               for E, H in [(8, 8), (8, 1), (9, 3), (6, 6), (32, 4)] for bias in (True, False)]

    def separate(facts, label):
        for i, first in enumerate(facts["shared"]):
            expect(first is None or first == i,
                   f"In {label}, layer.{PROJECTIONS[first]} and layer.{PROJECTIONS[i]} are the same layer; each "
                   "projection needs its own weights. A chained assignment such as self.W_q = self.W_k = "
                   "nn.Linear(...) makes one layer with two names.")

    def judge(r):
        facts = facts_of(r, h_facts, "MultiHeadAttention(embed_dim=8, num_heads=2)")
        expect(facts["module"], "MultiHeadAttention should be a subclass of nn.Module.")
        for name in PROJECTIONS:
            layer_facts = facts["layers"][name]
            expect(layer_facts["linear"], f"layer.{name} should be an nn.Linear, but it is {layer_facts['type']}.")
            sizes = (layer_facts["in_features"], layer_facts["out_features"])
            expect(sizes == (8, 8), f"layer.{name} should map 8 features to 8, but it maps {sizes[0]} to {sizes[1]}. "
                                    "Every projection is (embed_dim, embed_dim): the heads are slices of it, made by "
                                    "split_heads.")
            expect(layer_facts["bias"], f"With the default bias=True, layer.{name} should have a bias.")
        separate(facts, "MultiHeadAttention(8, 2)")
        facts = facts_of(r, h_no_bias, "MultiHeadAttention(8, 2, bias=False)")
        for name in PROJECTIONS:
            layer_facts = facts["layers"][name]
            expect(layer_facts["linear"], f"layer.{name} should be an nn.Linear, but it is {layer_facts['type']}.")
            expect(not layer_facts["bias"], f"MultiHeadAttention(8, 2, bias=False).{name} has a bias. Pass bias=bias "
                                            "on to nn.Linear.")
        for E, H, h in h_errors:
            expect_raises(r, h, f"MultiHeadAttention(embed_dim={E}, num_heads={H})", numbers=(E, H),
                          why=f"{E} features do not split into {H} equal heads, so it should refuse to be created",
                          fix="Check the width in __init__ and raise a ValueError that names embed_dim and num_heads.",
                          naming=f"embed_dim = {E} and num_heads = {H}")
        for E, H, bias, h in configs:
            label = f"MultiHeadAttention({E}, {H}, bias={bias})"
            facts = facts_of(r, h, label)
            for name in PROJECTIONS:
                expect(facts["layers"][name]["linear"],
                       f"In {label}, layer.{name} should be an nn.Linear, but it is {facts['layers'][name]['type']}.")
            separate(facts, label)
            count = sum(math.prod(shape) for _, shape in facts["parameters"])
            expected = 4 * E * E + (4 * E if bias else 0)
            expect(count == expected, f"{label} should have {expected} parameters, four (embed_dim, embed_dim) weights "
                                      f"plus four biases when bias=True, but it has {count}.")

    return judge


def test_self_attention(p):
    # The visible test's special cases: a fresh layer for each, the grader's
    # weights, then only the projections the visible test changes.
    x = p.randn(2, 5, 8)
    params = layer_weights(p, 8, True)

    def layer_with(changes):
        layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
        layer.set(params)
        if changes:
            layer.set(changes)
        return layer.call(x, x, x)

    h_plain = layer_with({})
    h_identity = layer_with({"W_q.weight": torch.eye(8), "W_q.bias": torch.zeros(8),
                             "W_k.weight": torch.eye(8), "W_k.bias": torch.zeros(8)})
    zeroed = [(name, layer_with({f"{name}.weight": torch.zeros(8, 8), f"{name}.bias": torch.zeros(8)}))
              for name in ("W_q", "W_k", "W_v")]
    comparisons = Comparisons(p)
    for B, T, E, H, bias in [(2, 5, 8, 2, True), (3, 4, 12, 4, True), (1, 6, 16, 1, True), (2, 7, 12, 3, False),
                             (4, 3, 32, 8, True), (2, 9, 24, 3, True), (3, 1, 8, 2, True)]:
        comparisons.add("self-attention", embed_dim=E, num_heads=H, B=B, Tq=T, bias=bias)

    def judge(r):
        on = "layer(x, x, x) for a random x of shape (2, 5, 8)"
        out, weights = pair_of(r, h_plain, on)
        expect_same_shape(f"The out tensor of {on}", out, (2, 5, 8))
        expect_same_shape(f"The weights of {on}", weights, (2, 2, 5, 5), weights_shape_hint(weights, (2, 2, 5, 5)))
        weights_sum_to_one(weights, f"in {on}")
        _, weights = pair_of(r, h_identity, "layer(x, x, x) with W_q and W_k the identity")
        expect_same_shape("The weights of layer(x, x, x) with W_q and W_k the identity", weights, (2, 2, 5, 5),
                          weights_shape_hint(weights, (2, 2, 5, 5)))
        weights = weights.float()
        d = 4
        for h in range(2):
            x_h = x[..., h * d:(h + 1) * d]  # (B, T, d)
            raw = x_h @ x_h.transpose(-2, -1)  # (B, T, T)
            got = weights[:, h]
            if torch.allclose(got, torch.softmax(raw / d**0.5, dim=-1), atol=1e-5):
                continue
            if torch.allclose(got, torch.softmax(raw / 8**0.5, dim=-1), atol=1e-5):
                cause = ("They match scores divided by sqrt(embed_dim) = sqrt(8): each head's dot products run over "
                         "head_dim = 4 features, so divide by sqrt(head_dim).")
            elif torch.allclose(got, torch.softmax(raw, dim=-1), atol=1e-5):
                cause = "They match unscaled scores: divide the scores by sqrt(head_dim)."
            else:
                cause = ("Check that split_heads gives head h features h*d .. (h+1)*d - 1 of every token, that the "
                         "softmax runs over the keys, and that the scores are divided by sqrt(head_dim).")
            raise Fail(f"In MultiHeadAttention(8, 2) with W_q and W_k set to the identity, head {h}'s weights should "
                       f"be the softmax of x_h x_h^T / sqrt(4), where x_h is features {h * d}..{h * d + d - 1} of "
                       f"each token of a random x of shape (2, 5, 8). They are not. {cause}")
        for name, h in zeroed:
            out, weights = pair_of(r, h, f"layer(x, x, x) with {name} set to zero")
            if name == "W_v":
                expected = params["W_o.bias"].expand(2, 5, 8)
                expect(out.shape == expected.shape and torch.allclose(out, expected, atol=1e-6),
                       "With W_v set to zero every value is zero, so every head outputs zeros and out should be W_o's "
                       "bias at every position. It is not: are the values projected with W_v, and is W_o applied "
                       "last?")
            else:
                expect(torch.allclose(weights, torch.full_like(weights, 1 / 5), atol=1e-6),
                       f"With {name} set to zero every {'query' if name == 'W_q' else 'key'} is zero, so every score "
                       "is 0 and each query should spread its weight evenly, 1/5 on each of the 5 keys. It does not: "
                       "are the queries projected with W_q and the keys with W_k?")
        comparisons.judge(r)

    return judge


def test_mask(p):
    x = p.randn(2, 5, 8)
    params = layer_weights(p, 8, True)
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    layer.set(params)
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    h_causal = layer.call(x, x, x, mask=causal)
    h_unmasked = layer.call(x, x, x)
    keep = torch.arange(5) < torch.tensor([5, 3])[:, None]
    pad_mask = keep[:, None, None, :]
    h_pad = layer.call(x, x, x, mask=pad_mask)
    other = x.clone()
    other[1, 3:] = p.randn(2, 8, scale=100)
    h_other = layer.call(x, other, other, mask=pad_mask)

    comparisons = Comparisons(p)
    gen, rng = p.gen, p.rng
    for H, bias in [(1, True), (4, True), (2, False)]:
        mask = torch.tril(torch.ones(6, 6, dtype=torch.bool))
        comparisons.add("a causal mask", embed_dim=16, num_heads=H, B=3, Tq=6, bias=bias, mask=mask, attn_mask=~mask)
    for B, Tq, Tk, H in [(3, 4, 7, 2), (2, 5, 5, 4), (4, 2, 6, 1)]:
        lengths = torch.from_numpy(rng.integers(1, Tk + 1, size=B))
        lengths[0] = Tk  # one full sequence, and at least one padded
        lengths[-1] = int(rng.integers(1, Tk))
        keep_ = torch.arange(Tk) < lengths[:, None]
        comparisons.add("a padding mask of shape (B, 1, 1, Tk)", embed_dim=8, num_heads=H, B=B, Tq=Tq, Tk=Tk,
                        mask=keep_[:, None, None, :], key_padding_mask=~keep_)
    B, H, Tq, Tk = 2, 3, 4, 6
    mask = torch.rand(B, H, Tq, Tk, generator=gen) > 0.5
    mask[..., int(rng.integers(0, Tk))] = True  # each query keeps at least one key
    comparisons.add("a mask per sequence and head, of shape (B, H, Tq, Tk)", embed_dim=12, num_heads=H, B=B, Tq=Tq,
                    Tk=Tk, mask=mask, attn_mask=~mask.reshape(B * H, Tq, Tk))
    mask = torch.rand(B, 1, 5, 5, generator=gen) > 0.4
    mask |= torch.eye(5, dtype=torch.bool)
    comparisons.add("a mask per sequence shared by the heads, of shape (B, 1, Tq, Tk)", embed_dim=12, num_heads=4,
                    B=B, Tq=5, mask=mask, attn_mask=~mask.expand(B, 4, 5, 5).reshape(B * 4, 5, 5))

    def judge(r):
        _, weights = pair_of(r, h_causal, "layer(x, x, x, mask=causal)")
        expect_same_shape("The weights with a causal mask", weights, (2, 2, 5, 5),
                          weights_shape_hint(weights, (2, 2, 5, 5)))
        expect(bool(torch.isfinite(weights).all()),
               "The weights with a causal mask contain NaN. A row whose keys are all masked out gives NaN, yet with a "
               "causal mask every query may attend at least to itself. Is your mask inverted? True means 'may "
               "attend': set the score to -inf where the mask is False.")
        future = weights.masked_select(~causal)  # weights on later keys, every sequence and head
        if future.abs().max() > 1e-6:
            _, unmasked = pair_of(r, h_unmasked, "layer(x, x, x)")
            if weights.masked_select(causal).abs().max() < 1e-6:
                cause = "The allowed positions got no weight instead: is your mask inverted? True means 'may attend'."
            elif unmasked.shape == weights.shape and torch.allclose(weights, unmasked, atol=1e-6):
                cause = "The weights are those without a mask: is the mask used? Set the scores to -inf where it is False."
            else:
                cause = "Set the masked scores to -inf (float('-inf')) before the softmax; a score of 0 still gets weight."
            raise Fail(f"With a causal mask no query may attend to a later key, but on a random x of shape (2, 5, 8) "
                       f"such weights reach {future.abs().max():.3g}. {cause}")
        weights_sum_to_one(weights, "with a causal mask")
        out, weights = pair_of(r, h_pad, "layer(x, x, x, mask=pad_mask)")
        expect_same_shape("The weights with a padding mask", weights, (2, 2, 5, 5),
                          weights_shape_hint(weights, (2, 2, 5, 5)))
        on_padding = weights[1, :, :, 3:].abs().max()
        expect(on_padding < 1e-6,
               f"Sequence 1 has 3 real tokens, so no query of it may attend to keys 3 and 4, yet in some head they get "
               f"weight {on_padding:.3g}. A (B, 1, 1, Tk) mask must reach every head of its own sequence: let it "
               "broadcast against (B, H, Tq, Tk) rather than reshaping or repeating it.")
        out_other, _ = pair_of(r, h_other, "layer(x, other, other, mask=pad_mask)")
        expect(out_other.shape == out.shape and torch.allclose(out_other, out, atol=1e-5),
               "Changing the keys and values stored in the padding changed the output: masked keys must have no "
               "influence.")
        comparisons.judge(r)

    return judge


def test_fully_masked(p):
    x = p.randn(2, 4, 8)
    params = layer_weights(p, 8, True)
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    h_facts = layer.facts(*PROJECTIONS)
    layer.set(params)
    causal = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    keep = torch.tensor([[True, True, True, True], [False, False, True, True]])
    mask = causal & keep[:, None, None, :]
    h_visible = layer.call(x, x, x, mask=mask)

    comparisons = Comparisons(p, blocked=True)
    keep_ = torch.arange(6) >= 6 - torch.tensor([6, 4, 1])[:, None]  # lengths 6, 4 and 1, padded on the left
    comparisons.add("left padding under a causal mask", embed_dim=12, num_heads=3, B=3, Tq=6,
                    mask=torch.tril(torch.ones(6, 6, dtype=torch.bool)) & keep_[:, None, None, :])
    keep_ = torch.tensor([[True] * 5, [True, True, False, False, False], [False] * 5])
    comparisons.add("cross-attention in which sequence 2 has no keys at all", embed_dim=8, num_heads=2, B=3, Tq=4,
                    Tk=5, bias=False, mask=keep_[:, None, None, :])
    mask_ = torch.rand(2, 4, 5, 6, generator=p.gen) > 0.5
    mask_[0, 1, 2] = False
    mask_[0, 0, 2, 3] = True
    mask_[1, 3, 0] = False
    mask_[1, 2, 0, 1] = True
    comparisons.add("a mask per sequence and head that leaves some queries no key in some heads only", embed_dim=16,
                    num_heads=4, B=2, Tq=5, Tk=6, mask=mask_)
    comparisons.add("a mask that allows no key at all", embed_dim=8, num_heads=2, B=2, Tq=3,
                    mask=torch.zeros(3, 3, dtype=torch.bool))

    def judge(r):
        out, weights = pair_of(r, h_visible, "layer(x, x, x, mask=mask) with two queries that have no allowed key")
        expect_same_shape("The out tensor", out, (2, 4, 8))
        expect_same_shape("The weights", weights, (2, 2, 4, 4), weights_shape_hint(weights, (2, 2, 4, 4)))
        blocked = weights[1, :, :2]  # queries 0 and 1 of sequence 1, in both heads
        expect(not bool(torch.isnan(blocked).any()),
               "Queries 0 and 1 of sequence 1 have no allowed key, and their weights are NaN: the softmax of a row "
               "whose scores are all -inf is 0/0. A query with nothing to attend to should get zero weight on every "
               "key: set the rows whose mask allows no key to 0, selecting with torch.where (multiplying by 0 keeps "
               "a NaN, since NaN * 0 is NaN).")
        expect(not torch.allclose(blocked, torch.full_like(blocked, 1 / 4), atol=1e-6),
               "Queries 0 and 1 of sequence 1 have no allowed key, yet each spreads its weight evenly, 1/4 on each of "
               "the 4 keys. Did you fill the masked scores with a large negative number (-1e9, or "
               "torch.finfo(...).min) instead of -inf? When every score of a row is that same number, the softmax "
               "makes the row uniform. A query with nothing to attend to should get zero weight on every key.")
        expect(blocked.abs().max() <= 1e-6,
               f"Queries 0 and 1 of sequence 1 have no allowed key, so their weights should be 0 on every key; the "
               f"largest is {blocked.abs().max():.3g}.")
        held = effective_params(params, PROJECTIONS, facts_of(r, h_facts, "MultiHeadAttention(8, 2)"))
        got = out[1, :2]
        expect(not bool(torch.isnan(got).any()),
               "The weights of queries 0 and 1 of sequence 1 are 0, but out is NaN there: compute the heads' outputs "
               "from the weights after those rows are set to 0, not from the softmax's NaN.")
        bias = held["W_o.bias"].expand_as(got)
        expect(torch.allclose(got, bias, atol=1e-6),
               "With zero weights every head outputs zeros for queries 0 and 1 of sequence 1, and W_o maps zeros to its "
               "bias: out there should equal layer.W_o.bias. It does not."
               + (" It is 0: apply W_o to the merged heads, as the last step."
                  if torch.allclose(got, torch.zeros_like(got)) else ""))
        sums = weights.sum(dim=-1)[mask.any(dim=-1).expand(2, 2, 4)]  # the queries that have an allowed key
        expect(not bool(torch.isnan(sums).any()),
               "Some queries that do have an allowed key got NaN weights, as if all their keys were masked: is the "
               "mask applied the right way round (True = may attend), and does each sequence and head get its own "
               "rows of it?")
        expect(torch.allclose(sums, torch.ones_like(sums), atol=1e-5),
               f"The queries that do have an allowed key should be unaffected, their weights summing to 1; the sums "
               f"range from {sums.min():.3g} to {sums.max():.3g}. Set to zero only the rows whose mask allows no key.")
        comparisons.judge(r)

    return judge


def test_cross_attention(p):
    params = layer_weights(p, 8, True)
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    layer.set(params)
    query, key, value = p.randn(2, 3, 8), p.randn(2, 6, 8), p.randn(2, 6, 8)
    h_cross = layer.call(query, key, value)
    h_same_lengths = layer.call(key, key, value)  # as many queries as keys: 6 and 6
    h_values = layer.call(query, key, 2 * value + 1)
    comparisons = Comparisons(p)
    for B, Tq, Tk, E, H, bias in [(3, 2, 7, 12, 3, True), (1, 5, 1, 8, 4, False), (2, 4, 9, 16, 1, True),
                                  (2, 6, 3, 16, 8, True), (4, 1, 5, 6, 2, True)]:
        comparisons.add("cross-attention", embed_dim=E, num_heads=H, B=B, Tq=Tq, Tk=Tk, bias=bias)
    lengths = torch.from_numpy(p.rng.integers(1, 8, size=3))
    lengths[0] = 7  # one full sequence, and at least one padded
    lengths[-1] = int(p.rng.integers(1, 7))
    keep = torch.arange(7) < lengths[:, None]
    comparisons.add("cross-attention with padding", embed_dim=12, num_heads=2, B=3, Tq=4, Tk=7, bias=False,
                    mask=keep[:, None, None, :], key_padding_mask=~keep)

    def judge(r):
        same_lengths_work = r.raised(h_same_lengths) is None
        out, weights = pair_of(r, h_cross, "forward with 3 queries and 6 keys",
                               "It works with 6 queries and 6 keys, so the different lengths are the trouble: did you "
                               "use the length of the queries for the keys and values too? Take each tensor's length "
                               "from that tensor." if same_lengths_work else "")
        expect_same_shape("The out tensor for 3 queries and 6 keys", out, (2, 3, 8))
        expect_same_shape("The weights for 3 queries and 6 keys", weights, (2, 2, 3, 6),
                          weights_shape_hint(weights, (2, 2, 3, 6)))
        _, weights_v = pair_of(r, h_values, "forward with 3 queries, 6 keys and other values")
        expect(weights_v.shape == weights.shape and torch.allclose(weights_v, weights, atol=1e-6),
               "Changing only the values changed the attention weights. The weights come from the queries and the "
               "keys alone: are the scores computed from W_k(key), and the values from W_v(value)?")
        comparisons.judge(r, same_lengths_work)

    return judge


CHECKS = {
    "test_split_heads": test_split_heads,
    "test_merge_heads": test_merge_heads,
    "test_init": test_init,
    "test_self_attention": test_self_attention,
    "test_mask": test_mask,
    "test_fully_masked": test_fully_masked,
    "test_cross_attention": test_cross_attention,
}
