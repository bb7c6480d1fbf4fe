"""The checks of ex04_multi_head (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/assignments/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verification/verify.py) runs them outside it on inputs drawn
afresh for every grading run. ``MultiheadCrossAttention`` is instantiated
where the student's code runs, which reports its parameters' names and
shapes as built-in types; the check compares them with a real
``nn.MultiheadAttention`` of the same settings, copies weights drawn here into
the student's layer by those names, and compares its outputs with that
layer's holding the same weights, ``add_zero_attn`` included. The attributes the
task promises are read through the notebook's ``layer_attributes``. A failed check's message is what the student
reads in the feedback: which setting, on what input, how far off and the likely
cause, never the expected values.
"""

import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

from tools.verification.probes import BadResult, Fail, Nested, as_tensor, close_torch, describe, diagnosis, expect


def close(got, ref, *, atol, rtol, what, on, cause):
    """close_torch, with the likely cause (a function: it is worked out only when the values are off)."""
    try:
        close_torch(got, ref, atol=atol, rtol=rtol, what=what, on=on)
    except Fail:
        close_torch(got, ref, atol=atol, rtol=rtol, what=what, on=on, cause=cause())


def settings_label(E, H, settings, cls="MultiheadCrossAttention"):
    return f"{cls}({E}, {H}{''.join(f', {k}={v}' for k, v in settings.items())})"


def torch_layer(E, H, settings, state=None):
    """nn.MultiheadAttention with these settings (batch first, eval mode), holding ``state`` if given."""
    layer = nn.MultiheadAttention(E, H, batch_first=True, **settings).eval()
    if state is not None:
        layer.load_state_dict(state)
    return layer


def expected_parameters(E, H, settings):
    return sorted((name, tuple(t.shape)) for name, t in torch_layer(E, H, settings).named_parameters())


def draw_state(p, E, H, settings):
    """Weights for every parameter of the layer, drawn from this run's generator (biases not zero)."""
    state = {}
    for name, shape in expected_parameters(E, H, settings):
        if name.endswith("bias"):
            state[name] = torch.randn(*shape, generator=p.gen) * 0.3
        else:
            bound = 1 / math.sqrt(shape[-1])
            state[name] = (torch.rand(*shape, generator=p.gen) * 2 - 1) * bound * 1.5
    return state


def reference(E, H, settings, state, query, key, value, padding=None, average=True):
    """nn.MultiheadAttention's out and weights; for a sequence whose keys are all padding, the out of
    need_weights=False (out_proj's bias) and zero weights, the exercise's choice."""
    layer = torch_layer(E, H, settings, state)
    with torch.no_grad():
        out, weights = layer(query, key, value, key_padding_mask=padding, average_attn_weights=average)
        if padding is not None and bool(padding.all(dim=-1).any()):
            out, _ = layer(query, key, value, key_padding_mask=padding, need_weights=False)
            weights = torch.nan_to_num(weights, nan=0.0)
    return out, weights


def zeros_before_projection(E, H, settings, state, query, key, value, padding):
    """The per-head weights of a layer that appends its zero key and value before the projections (the slip)."""
    plain = {k: v for k, v in settings.items() if k != "add_zero_attn"}
    B = key.shape[0]
    key = torch.cat([key, key.new_zeros(B, 1, key.shape[-1])], dim=1)
    value = torch.cat([value, value.new_zeros(B, 1, value.shape[-1])], dim=1)
    if padding is not None:
        padding = torch.cat([padding, padding.new_zeros(B, 1)], dim=1)
    return reference(E, H, plain, state, query, key, value, padding, average=False)[1]


def heads_variant(E, H, settings, state, query, key, value, padding, scale_by_E=False, inverted=False,
                  view_only=False, biases_swapped=False):
    """The per-head weights with one of the usual slips, for naming a likely cause."""
    if "in_proj_weight" in state:
        w_q, w_k, _ = state["in_proj_weight"].chunk(3)
    else:
        w_q, w_k = state["q_proj_weight"], state["k_proj_weight"]
    b_q, b_k = (None, None) if "in_proj_bias" not in state else state["in_proj_bias"].chunk(3)[:2]
    if biases_swapped:
        b_q, b_k = b_k, b_q
    B, Tq, Tk, d = query.shape[0], query.shape[1], key.shape[1], E // H

    def split(x, T):
        return x.reshape(B, H, T, d) if view_only else x.reshape(B, T, H, d).transpose(1, 2)

    q, k = split(F.linear(query, w_q, b_q), Tq), split(F.linear(key, w_k, b_k), Tk)
    scores = q @ k.transpose(-2, -1) / math.sqrt(E if scale_by_E else d)
    if padding is not None:
        hidden = padding[:, None, None, :]
        scores = scores.masked_fill(~hidden if inverted else hidden, float("-inf"))
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)


# The likely mistakes these checks name, by code: what the mistake is, and the chapter section that teaches it
# (the instructor's report, instructor/report.md). The codes every check may report are in probes.GENERAL_CAUSES.
CAUSES = {
    "zero_attn_before_projection": ("add_zero_attn's zeros appended before the projections",
                                    "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "zero_attn_missing": ("add_zero_attn's zero key missing: the weights have one key too few",
                          "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "zero_attn_first": ("add_zero_attn's zero key put before the real keys instead of after them",
                        "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "bias_order": ("in_proj_bias cut in another order than in_proj_weight's [queries | keys | values]",
                   "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "empty_sequence_nan": ("a sequence whose keys are all padding gives NaN instead of zero weights",
                           "ch06_multi_head: A query with nothing to attend to"),
    "empty_sequence_spread": ("a sequence whose keys are all padding spreads its weight evenly over them instead of "
                              "getting zero weights", "ch06_multi_head: A query with nothing to attend to"),
    "never_stacked": ("three separate projection weights even when kdim and vdim equal embed_dim",
                      "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "stacked_only_when_omitted": ("weights stacked only when kdim and vdim are left out, not when given equal to "
                                  "embed_dim", "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "weight_in_out_order": ("a projection weight stored (in, out) instead of nn.Linear's (out, in)",
                            "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "attribute_kept_none": ("kdim or vdim left None instead of embed_dim when not given",
                            "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "scaled_by_embed_dim": ("scores divided by sqrt(embed_dim) instead of the head width",
                            "ch06_multi_head: Attention in every head at once"),
    "padding_inverted": ("the padding mask read the wrong way round", "ch04_softmax_masking: PyTorch's two boolean conventions"),
    "heads_summed": ("the default weights summed over the heads instead of averaged",
                     "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "need_weights_ignored": ("weights returned with need_weights=False, where the layer returns None",
                             "ch06_multi_head: The same layer as `nn.MultiheadAttention`"),
    "heads_cut_wrong": ("heads cut with a reshape straight to (B, H, T, d)", "ch06_multi_head: Splitting the width into heads"),
}


def heads_cause(got, *args):
    E, H, settings, state, query, key, value, padding = args
    if settings.get("add_zero_attn"):
        before = zeros_before_projection(*args)
        if tuple(got.shape) == tuple(before.shape) and bool(torch.allclose(got, before, atol=1e-4, rtol=1e-3)):
            return (diagnosis("zero_attn_before_projection", "They match zeros appended to key and value before the projections: a zero projected with a "
                    "bias is the bias. The zero key and value are zeros in every head, after projecting."))
        ref = reference(*args, average=False)[1]
        first = torch.cat([ref[..., -1:], ref[..., :-1]], dim=-1)   # the zero key moved before the real ones
        if tuple(got.shape) == tuple(first.shape) and bool(torch.allclose(got, first, atol=1e-4, rtol=1e-3)):
            return diagnosis("zero_attn_first", "They match your zero key's weights, but in another place among the "
                                                "keys than nn.MultiheadAttention's.")
        return ("With add_zero_attn, every query may also attend to one zero key, whose value is zero, in every "
                "head; padding never hides it.")
    for code, text, slip in [
        ("scaled_by_embed_dim", "They match scores divided by sqrt(embed_dim): divide by sqrt(d), the width of one head.", dict(scale_by_E=True)),
        ("padding_inverted", "They match a padding mask read the wrong way round: True in key_padding_mask marks padding, the keys no "
         "query may attend to.", dict(inverted=True)),
        ("heads_cut_wrong", "They match heads cut with a reshape straight to (B, H, T, d): cut (B, T, E) into (B, T, H, d), then move "
         "the head axis forward.", dict(view_only=True)),
        ("bias_order", "They match the query and key biases swapped: in_proj_bias is cut in the order of "
         "in_proj_weight's rows.", dict(biases_swapped=True)),
    ]:
        got_ = got
        candidate = heads_variant(*args, **slip)
        if tuple(got_.shape) == tuple(candidate.shape) and bool(torch.allclose(got_, candidate, atol=1e-4, rtol=1e-3)):
            return diagnosis(code, text)
    return (diagnosis("other", "Project with each weight (nn.Linear's (out, in) layout), cut E into H heads of width d, scale by sqrt(d) "
            "and hide the padding keys."))


def nan_cause(w, out, nothing):
    """empty_sequence_nan if the NaN of the weights (B, Tq, Tk) and out (B, Tq, E) are in the sequences with nothing
    to attend to (``nothing``, (B,)) and only there."""
    if not bool(nothing.any()) or w.shape[0] != nothing.shape[0] or out.shape[0] != nothing.shape[0]:
        return None
    nan = torch.isnan(w).flatten(1).any(dim=-1) | torch.isnan(out).flatten(1).any(dim=-1)
    return "empty_sequence_nan" if torch.equal(nan, nothing) else None


def averaged_cause(w, ref_w, nothing, label):
    """The likely cause of wrong averaged weights: summed heads, or a sequence with nothing to attend to (``nothing``,
    (B,)) that spreads its weight evenly over its padding, the other sequences right."""
    if bool(torch.allclose(w, ref_w * int(label.split(", ")[1].rstrip(")")), atol=1e-4)):
        return diagnosis("heads_summed", "They match the heads' weights summed: average them (the mean over the head axis).")
    if bool(nothing.any()) and bool(torch.allclose(w[~nothing], ref_w[~nothing], atol=1e-5, rtol=1e-5)) and bool(
            torch.allclose(w[nothing], torch.full_like(w[nothing], 1 / w.shape[-1]), atol=1e-4)):
        return diagnosis("empty_sequence_spread", "Where every key is padding, your weights are spread evenly over "
                                                  "the padding: such a sequence has nothing to attend to.")
    return ("They are the mean over the head axis of the per-head weights; where those are off too (section 2's "
            "test), the cause is in the heads: the projections, the scale or the mask. Without add_zero_attn, a "
            "sequence that is all padding gets zeros.")


def pair(r, handle, what):
    return r.tensor_pair(handle, what)


def expect_same_shape(got, ref, what, hint="", cause=None):
    expect(tuple(got.shape) == tuple(ref.shape),
           f"{what} should have shape {tuple(ref.shape)}, but it has shape {tuple(got.shape)}. {hint}".rstrip(), cause=cause)


def one_key_short(got, ref, label):
    """zero_attn_missing, if with add_zero_attn the weights have exactly one key (the last axis) too few."""
    shape, want = tuple(got.shape), tuple(ref.shape)
    if "add_zero_attn=True" in label and shape[:-1] == want[:-1] and len(shape) == len(want) and shape[-1] == want[-1] - 1:
        return "zero_attn_missing"
    return None


def layout_cause(got, expected, settings):
    """The code of a parameter layout that differs from nn.MultiheadAttention's, if it is a usual one.
    The configurations are checked in order: one with kdim and vdim equal to embed_dim but given explicitly
    comes after one where they are left out, so its layout already passed there."""
    names, want_names = {n for n, _ in got}, {n for n, _ in expected}
    if names == want_names:
        shapes = dict(got)
        if all(tuple(shapes[n]) in (tuple(s), tuple(s)[::-1]) for n, s in expected):
            return "weight_in_out_order"
        return None
    if "in_proj_weight" in want_names and {"q_proj_weight", "k_proj_weight", "v_proj_weight"} <= names:
        return "stacked_only_when_omitted" if "kdim" in settings or "vdim" in settings else "never_stacked"
    return None


ATTRIBUTES = ("embed_dim", "num_heads", "kdim", "vdim", "add_zero_attn")


def positional(settings):
    """kdim, vdim, bias, add_zero_attn: the given signature's order, for a layer built through Nested."""
    return (settings.get("kdim"), settings.get("vdim"), settings.get("bias", True), settings.get("add_zero_attn", False))


def number_named(message, n):
    return re.search(rf"(?<![\w.]){n}(?!\w|\.\d)", message) is not None


def test_parameters(p):
    configs = [(8, 2, {}), (8, 2, dict(kdim=5, vdim=3)), (8, 2, dict(kdim=8, vdim=8)), (8, 2, dict(vdim=4)),
               (8, 2, dict(kdim=6, bias=False)),
               (12, 4, dict(kdim=7, vdim=5)), (6, 6, dict(kdim=6, vdim=6, bias=False)), (9, 3, dict(kdim=4, vdim=9)),
               (5, 1, dict(kdim=5)), (4, 2, dict(bias=False)), (10, 5, dict(kdim=10, vdim=3, bias=False)),
               (8, 2, dict(kdim=5, add_zero_attn=True)), (12, 4, dict(bias=False, add_zero_attn=True))]
    checks = []
    for E, H, settings in configs:
        m = p.module("MultiheadWeights", E, H, **settings)
        layer = torch_layer(E, H, settings)
        attributes = p.call("layer_attributes", Nested("MultiheadWeights", E, H, *positional(settings)),
                            list(ATTRIBUTES))
        checks.append((settings_label(E, H, settings, "MultiheadWeights"), expected_parameters(E, H, settings), m.facts(),
                       m.set(draw_state(p, E, H, settings)),
                       attributes, [getattr(layer, name) for name in ATTRIBUTES], settings))
    errors = [((10, 3), {}), ((10, 4), {}), ((7, 2), dict(kdim=3, vdim=5))]
    h_errors = [(settings_label(*args, settings, "MultiheadWeights"), args,
                 p.module("MultiheadWeights", *args, **settings).created)
                for args, settings in errors]

    def judge(r):
        for label, expected, h_facts, h_set, h_attributes, expected_attributes, settings in checks:
            facts = r.facts(h_facts, label)
            expect(facts["module"], f"{label} should be an nn.Module.")
            got = sorted((name, tuple(shape)) for name, shape in facts["parameters"])
            expect(got == expected, f"{label} should store the parameters {expected} (names and shapes), as "
                                    f"nn.MultiheadAttention does; yours are {got}. One stacked in_proj_weight when kdim "
                                    "and vdim both equal embed_dim, else three separate weights in nn.Linear's "
                                    "(out, in) layout.", cause=layout_cause(got, expected, settings))
            error = r.raised(h_set)
            expect(error is None, f"Copying nn.MultiheadAttention's weights into {label} by name failed: {error}.")
            got_attributes = r.value(h_attributes, f"the attributes of {label}")
            expect(isinstance(got_attributes, list) and len(got_attributes) == len(ATTRIBUTES),
                   f"The attributes of {label} did not come back.")
            for name, got, want in zip(ATTRIBUTES, got_attributes, expected_attributes):
                expect(type(got) is type(want) and got == want,
                       f"{label}.{name} should equal nn.MultiheadAttention's {name} for the same settings; yours is "
                       f"{describe(got) if got != '(missing)' else 'missing'}.",
                       cause="attribute_kept_none" if name in ("kdim", "vdim") and got is None and name not in settings
                       else None)
        for label, (E, H), h in h_errors:
            error = r.raised(h)
            expect(error is not None, f"{label} should raise ValueError ({E} is not divisible by {H}), but it was built.",
                   cause="no_validation")
            expect(error.is_a("ValueError"), f"{label} should raise ValueError, but it raised {error.type}: "
                                             f"{error.message[:200]}")
            expect(number_named(error.message, E) and number_named(error.message, H),
                   f"The ValueError of {label} should name both {E} and {H}. It says: {error.message[:200]}")

    return judge


def test_heads(p):
    randn = p.randn
    cases = []

    def case(E, H, settings, B, Tq, Tk, padding=None, self_attention=False):
        label = settings_label(E, H, settings)
        state = draw_state(p, E, H, settings)
        m = p.module("MultiheadCrossAttention", E, H, **settings)
        m.set(state)
        m.eval()
        query = randn(B, Tq, E)
        if self_attention:
            key = value = query
        else:
            key, value = randn(B, Tk, settings.get("kdim", E)), randn(B, Tk, settings.get("vdim", E))
        on = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}" + (
            "" if padding is None else f", {int(padding.sum())} padding keys")
        h = m.call(query, key, value, key_padding_mask=padding, average_attn_weights=False)
        args = (E, H, settings, state, query, key, value, padding)
        cases.append((label, on, args, reference(*args, average=False), h))

    def some_padding(B, Tk):
        padding = torch.from_numpy(p.rng.random((B, Tk)) < 0.4)
        padding[torch.arange(B), torch.from_numpy(p.rng.integers(0, Tk, size=B))] = False   # a real key in each
        return padding

    # The visible test's settings, with the grader's weights and inputs.
    case(8, 2, dict(kdim=5, vdim=3), 2, 3, 4, torch.tensor([[False, False, False, False], [False, False, True, True]]))
    case(6, 3, {}, 2, 5, 5, self_attention=True)
    case(8, 2, dict(kdim=5, vdim=3, add_zero_attn=True), 2, 3, 4,
         torch.tensor([[False, False, False, False], [False, False, True, True]]))
    # The hidden tests' settings.
    case(12, 4, dict(kdim=7, vdim=5), 3, 5, 6, some_padding(3, 6))
    case(12, 4, dict(kdim=7, vdim=5, add_zero_attn=True), 3, 5, 6, some_padding(3, 6))
    case(6, 3, dict(bias=False, add_zero_attn=True), 2, 4, 4, self_attention=True)
    case(4, 2, dict(add_zero_attn=True), 2, 1, 3, some_padding(2, 3), self_attention=False)
    case(6, 6, dict(kdim=6, vdim=6, bias=False), 2, 1, 4, some_padding(2, 4))
    case(9, 3, dict(vdim=4), 1, 4, 1)
    case(8, 1, dict(kdim=3, bias=False), 2, 3, 5, some_padding(2, 5))
    case(4, 2, {}, 3, 6, 6, some_padding(3, 6), self_attention=True)

    def judge(r):
        for label, on, args, (ref_out, ref_w), h in cases:
            out, w = pair(r, h, f"{label}(query, key, value, ..., average_attn_weights=False) on {on}")
            expect_same_shape(w, ref_w, f"The per-head weights of {label} on {on}",
                              "average_attn_weights=False: one (Tq, Tk) matrix per head"
                              + (", with one more key, the zero key." if "add_zero_attn" in label else "."),
                              cause=one_key_short(w, ref_w, label))
            expect_same_shape(out, ref_out, f"out of {label} on {on}")
            close(w, ref_w, atol=1e-5, rtol=1e-5, what=f"The per-head weight tensor of {label}", on=on,
                  cause=lambda: heads_cause(w, *args))
            close_torch(out, ref_out, atol=1e-5, rtol=1e-5, what=f"out of {label}", on=on,
                        cause="out is the heads side by side, (B, Tq, H * d), through out_proj (atol=rtol=1e-5).")

    return judge


def test_averaged(p):
    """Section 3 on its own: the averaged weights are the mean of the layer's own per-head weights, its out is the
    same whatever it is asked to return, a sequence with nothing to attend to gets zero weights and out_proj's bias,
    and with add_zero_attn such a sequence is not empty. What every head computes is section 2's test: a slip
    there costs section 2's points, not these too (PyTorch's per-head weights stand in only where the layer's own
    cannot be read)."""
    randn = p.randn
    cases = []

    def case(E, H, settings, B, Tq, Tk, padding):
        label = settings_label(E, H, settings)
        state = draw_state(p, E, H, settings)
        m = p.module("MultiheadCrossAttention", E, H, **settings)
        m.set(state)
        m.eval()
        query, key, value = randn(B, Tq, E), randn(B, Tk, settings.get("kdim", E)), randn(B, Tk, settings.get("vdim", E))
        empty = [int(b) for b in torch.nonzero(padding.all(dim=-1)).flatten()]
        on = f"query {tuple(query.shape)}, key {tuple(key.shape)}" + (
            f", sequence {empty[0]} all padding" if empty else ", some padding keys")
        ref = reference(E, H, settings, state, query, key, value, padding, average=True)
        ref_heads = reference(E, H, settings, state, query, key, value, padding, average=False)[1]
        zero_attn = settings.get("add_zero_attn", False)
        # (B,): the sequences with nothing to attend to (none with add_zero_attn, whose zero key is always there)
        nothing = padding.all(dim=-1) & (not zero_attn)
        handles = (m.call(query, key, value, key_padding_mask=padding),
                   m.call(query, key, value, key_padding_mask=padding, average_attn_weights=False),
                   m.call(query, key, value, key_padding_mask=padding, need_weights=False))
        cases.append((label, on, ref, ref_heads, handles, nothing, padding.all(dim=-1) & zero_attn))

    case(8, 4, dict(kdim=3, vdim=5), 2, 3, 6, torch.tensor([[False, True, False, False, True, False], [False] * 6]))
    case(8, 4, dict(kdim=3, vdim=5), 2, 3, 6, torch.tensor([[False, True, False, False, True, False], [True] * 6]))
    case(8, 4, dict(kdim=3, vdim=5, add_zero_attn=True), 2, 3, 6,
         torch.tensor([[False, True, False, False, True, False], [True] * 6]))
    for E, H, settings, B, Tq, Tk in [(12, 4, dict(kdim=7, vdim=5), 4, 5, 6), (6, 3, dict(bias=False), 3, 2, 4),
                                      (10, 5, dict(kdim=2, vdim=9), 2, 1, 3),
                                      (10, 2, dict(vdim=3, add_zero_attn=True), 3, 4, 5)]:
        padding = torch.from_numpy(p.rng.random((B, Tk)) < 0.4)
        padding[:, 0] = False
        padding[int(p.rng.integers(0, B))] = True                   # one sequence with nothing to attend to
        case(E, H, settings, B, Tq, Tk, padding)

    def own_heads(r, handle, ref_out, ref_heads, what):
        """The layer's own out and per-head weights (B, H, Tq, K), or PyTorch's where they cannot be read."""
        try:
            out, heads = pair(r, handle, what)
        except BadResult:
            raise  # not plain data of the expected form: a result that is not a layer's, never stood in for
        except Fail:
            return ref_out, ref_heads
        if heads.dim() != 4 or heads.shape[:3] != ref_heads.shape[:3] or out.shape != ref_out.shape:
            return ref_out, ref_heads
        return out, heads

    def judge(r):
        for label, on, (ref_out, _), ref_heads, (h_default, h_heads, h_none), nothing, not_empty in cases:
            out, w = pair(r, h_default, f"{label}(query, key, value, key_padding_mask=...) on {on}")
            own_out, heads = own_heads(r, h_heads, ref_out, ref_heads,
                                       f"{label}(..., average_attn_weights=False) on {on}")
            mean = torch.nan_to_num(heads.mean(dim=1), nan=0.0)
            expect_same_shape(w, mean, f"The default weights of {label} on {on}",
                              "By default (average_attn_weights=True) the weights are averaged over the heads: "
                              "one (Tq, Tk) matrix per sequence, your per-head weights' shape without the head axis.")
            expect(not bool(torch.isnan(w).any()) and not bool(torch.isnan(out).any()),
                   f"{label} returned NaN on {on}. A sequence whose keys are all padding should get zero weights "
                   "(torch.where selects; multiplying by 0 would keep the NaN).", cause=nan_cause(w, out, nothing))
            expect(bool((w[nothing] == 0).all()),
                   f"{label} on {on}: a sequence whose keys are all padding has nothing to attend to, and its weights "
                   "should be all zeros.",
                   cause=("empty_sequence_spread" if bool(torch.allclose(
                       w[nothing], torch.full_like(w[nothing], 1 / w.shape[-1]), atol=1e-4)) else None))
            close(w, mean, atol=1e-5, rtol=1e-5, what=f"The averaged weight matrix of {label}", on=on,
                  cause=lambda: averaged_cause(w, mean, nothing, label))
            close_torch(w[not_empty].sum(dim=-1), torch.ones(w[not_empty].shape[:-1], dtype=w.dtype), atol=1e-5,
                        rtol=1e-5, what=f"The sum of each query's weights over the keys in a sequence of padding "
                                        f"with add_zero_attn=True ({label})", on=on,
                        cause="With add_zero_attn a sequence of padding is not empty: its queries may attend to the "
                              "zero key.")
            close_torch(out[nothing], ref_out[nothing], atol=1e-5, rtol=1e-5,
                        what=f"out of {label} where a sequence is all padding", on=on,
                        cause="With zero weights every head outputs zeros, so out is out_proj's bias (zeros without "
                              "bias).")
            close_torch(out, own_out, atol=1e-5, rtol=1e-5, what=f"out of {label} with averaged weights", on=on,
                        cause="out is the same whether the weights come back per head or averaged.")
            result = r.value(h_none, f"{label}(..., need_weights=False) on {on}")
            expect(isinstance(result, (tuple, list)) and len(result) == 2 and result[1] is None,
                   f"With need_weights=False, {label} should return a pair (out, None); it returned "
                   f"{describe(result)}" + ("" if not isinstance(result, (tuple, list)) or len(result) != 2 else
                                            f" whose second item is {describe(result[1])}") + ".",
                   cause="need_weights_ignored" if isinstance(result, (tuple, list)) and len(result) == 2 else None)
            close_torch(as_tensor(result[0], "out with need_weights=False"), out, atol=1e-5, rtol=1e-5,
                        what=f"out of {label} with need_weights=False", on=on,
                        cause="out is the same whether the weights are returned or not.")

    return judge


CHECKS = {
    "test_parameters": test_parameters,
    "test_heads": test_heads,
    "test_averaged": test_averaged,
}
