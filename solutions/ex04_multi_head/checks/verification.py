"""Verification of ex04_multi_head (PyTorch): one check per graded test cell.

``split_heads`` and ``merge_heads`` are called on fresh inputs of the hidden
tests' shapes and compared exactly. ``MultiHeadAttention`` is instantiated in
the sandbox, which reports its structure as built-in types; the grader copies
its own weights into ``W_q``, ``W_k``, ``W_v`` and ``W_o`` and compares the
outputs with ``torch.nn.MultiheadAttention`` carrying the same weights, here,
with the hidden tests' tolerances. Where a mask leaves a query no key at all,
the reference is computed here from the definition (``reference_blocked``):
all-zero weights, and zeros from every head, as the hidden tests expect; it
does not depend on how a PyTorch version treats such rows. Error messages are
checked on the hidden tests' own bad inputs.
"""

import math
import warnings

import torch

from tools.verification.probes import Transposed, as_tensor, close_torch, effective_params, expect, expect_value_error, names_shape

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


def expect_shape_error(r, handle, what, shape):
    """A ValueError whose message names ``shape`` by the notebooks' rule."""
    expect_value_error(r, handle, what)
    message = r.raised(handle).message
    expect(names_shape(message, shape), f"the ValueError of {what} does not name the shape {shape}: {message[:200]!r}")


def by_slicing(x, num_heads):
    """(B, T, D) -> (B, H, T, d), cut by slicing: the heads a correct split_heads gives."""
    d = x.shape[-1] // num_heads
    return torch.stack([x[..., h * d:(h + 1) * d] for h in range(num_heads)], dim=1)


def labelled(B, T, D):
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
    """Multi-head attention from its definition, head by head, in float64, as
    the hidden tests of test_fully_masked compute it: head h uses rows
    h*d .. (h+1)*d - 1 of W_q, W_k and W_v, and a query with no allowed key
    gets zero weights. Returns out and per-head weights as float32."""

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


class Comparisons:
    """Layers with the grader's weights, run on fresh inputs, against nn.MultiheadAttention
    (or, with ``blocked=True``, against ``reference_blocked``).

    The reference uses the weights the layer really holds after they were
    copied in (see ``effective_params``), as the hidden tests use the layer's
    own weights."""

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
        layer.set(params)
        layer.eval()
        handle = layer.call(query, key, value, mask=mask)
        references = {}

        def reference(layer_facts):
            shape = (tuple(layer_facts["shared"]), tuple(layer_facts["bias_shared"]))
            if shape not in references:
                held = effective_params(params, PROJECTIONS, layer_facts)
                if self.blocked:
                    references[shape] = reference_blocked(held, embed_dim, num_heads, bias, query, key, value, mask)
                else:
                    references[shape] = reference_mha(held, embed_dim, num_heads, bias, query, key, value,
                                                      **mha_kwargs)
            return references[shape]

        label = f"{label} (B={B}, Tq={Tq}, Tk={Tq if Tk is None else Tk}, D={embed_dim}, H={num_heads}, bias={bias})"
        self.cases.append((label, facts, reference, handle))

    def judge(self, r):
        for label, facts, reference, handle in self.cases:
            out, weights = r.tensor_pair(handle, label)
            ref_out, ref_w = reference(r.facts(facts, label))
            expect(tuple(weights.shape) == tuple(ref_w.shape),
                   f"{label}: weights have shape {tuple(weights.shape)}, expected {tuple(ref_w.shape)}")
            close_torch(weights, ref_w, atol=1e-5, rtol=1e-5, what=f"{label}: weights")
            close_torch(out, ref_out, atol=1e-5, rtol=1e-5, what=f"{label}: out")


def test_split_heads(p):
    h_visible = p.call("split_heads", labelled(1, 4, 6), 2)
    h_error_width = p.call("split_heads", torch.zeros(1, 4, 10), 4)
    h_error_2d = p.call("split_heads", torch.zeros(4, 6), 2)
    cases = []
    for B, T, D, H in [(3, 5, 12, 1), (3, 5, 12, 2), (3, 5, 12, 3), (2, 7, 12, 4), (2, 6, 12, 6),
                       (1, 3, 8, 8), (4, 2, 20, 5), (2, 9, 6, 3)]:
        x = p.randn(B, T, D)
        cases.append((f"split_heads on a ({B}, {T}, {D}) input with {H} heads", x, H,
                      p.call("split_heads", x, H, after=(0,))))
    h_labelled = p.call("split_heads", labelled(3, 6, 8), 4)
    errors = [((2, 3, 14), 4, ("14", "4")), ((1, 5, 9), 2, ("9", "2"))]
    h_errors = [(shape, H, numbers, p.call("split_heads", torch.zeros(*shape), H)) for shape, H, numbers in errors]
    h_error_4d = p.call("split_heads", torch.zeros(2, 3, 4, 8), 2)

    def judge(r):
        close_torch(r.tensor(h_visible, "split_heads(x, 2)"), reference_split(labelled(1, 4, 6), 2), atol=0, rtol=0,
                    what="split_heads(x, 2) on the visible example")
        expect_value_error(r, h_error_width, "split_heads(x, 4) with D = 10", patterns=(r"\b10\b", r"\b4\b"))
        expect_shape_error(r, h_error_2d, "split_heads on a 2-D tensor of shape (4, 6)", (4, 6))
        for label, x, H, h in cases:
            got = r.tensor(h, label)
            B, T, D = x.shape
            expect(tuple(got.shape) == (B, H, T, D // H), f"{label} returned shape {tuple(got.shape)}")
            close_torch(got, reference_split(x, H), atol=0, rtol=0, what=f"{label} (compared exactly)")
            expect(torch.equal(as_tensor(r.after(h, 0), label), x), f"{label} changed its input")
        close_torch(r.tensor(h_labelled, "split_heads"), reference_split(labelled(3, 6, 8), 4), atol=0, rtol=0,
                    what="split_heads for B=3, T=6, D=8, H=4")
        for shape, H, numbers, h in h_errors:
            expect_value_error(r, h, f"split_heads with D={shape[-1]}, num_heads={H}",
                               patterns=tuple(rf"\b{n}\b" for n in numbers))
        expect_shape_error(r, h_error_4d, "split_heads on a 4-D input of shape (2, 3, 4, 8)", (2, 3, 4, 8))

    return judge


def test_merge_heads(p):
    heads = torch.stack([labelled(1, 4, 3)[0] + 100 * h for h in range(2)])[None]
    h_visible = p.call("merge_heads", heads)
    x_round = labelled(2, 5, 6)
    h_round_visible = p.call("merge_heads", by_slicing(x_round, 3))
    cases = []
    for B, H, T, d in [(3, 1, 5, 4), (3, 2, 5, 3), (2, 4, 6, 2), (1, 8, 3, 1), (2, 3, 7, 5)]:
        x = p.randn(B, H, T, d)
        cases.append((f"merge_heads on a ({B}, {H}, {T}, {d}) input", x, p.call("merge_heads", x)))
    x_strided = p.randn(2, 6, 4, 3).transpose(1, 2).contiguous()
    h_strided = p.call("merge_heads", Transposed(x_strided, (1, 2)))
    x_round2 = p.randn(3, 7, 12)
    h_round = p.call("merge_heads", by_slicing(x_round2, 4))

    def judge(r):
        close_torch(r.tensor(h_visible, "merge_heads(heads)"), reference_merge(heads), atol=0, rtol=0,
                    what="merge_heads on the visible example")
        got = r.tensor(h_round_visible, "merge_heads of x's 3 heads cut by slicing")
        expect(got.shape == x_round.shape and torch.equal(got, x_round), "merge_heads of x's 3 heads is not x")
        for label, x, h in cases:
            got = r.tensor(h, label)
            B, H, T, d = x.shape
            expect(tuple(got.shape) == (B, T, H * d), f"{label} returned shape {tuple(got.shape)}")
            close_torch(got, reference_merge(x), atol=0, rtol=0, what=f"{label} (compared exactly)")
        close_torch(r.tensor(h_strided, "merge_heads"), reference_merge(x_strided), atol=0, rtol=0,
                    what="merge_heads on an input that is not contiguous in memory")
        close_torch(r.tensor(h_round, "merge_heads of x's 4 heads cut by slicing"), x_round2, atol=0, rtol=0,
                    what="merge_heads of the 4 heads of x of shape (3, 7, 12)")

    return judge


def test_init(p):
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    h_facts = layer.facts(*PROJECTIONS)
    h_no_bias = p.module("MultiHeadAttention", embed_dim=8, num_heads=2, bias=False).facts(*PROJECTIONS)
    h_visible_error = p.module("MultiHeadAttention", embed_dim=10, num_heads=3).created
    h_errors = [(E, H, p.module("MultiHeadAttention", E, H).created) for E, H in [(12, 5), (7, 2), (6, 4)]]
    configs = [(E, H, bias, p.module("MultiHeadAttention", E, H, bias=bias).facts(*PROJECTIONS))
               for E, H in [(8, 8), (8, 1), (9, 3), (6, 6), (32, 4)] for bias in (True, False)]

    def judge(r):
        facts = r.facts(h_facts, "MultiHeadAttention(8, 2)")
        expect(facts["module"], "MultiHeadAttention is not an nn.Module")
        for name in PROJECTIONS:
            layer_facts = facts["layers"][name]
            expect(layer_facts["linear"], f"layer.{name} is not an nn.Linear")
            expect((layer_facts["in_features"], layer_facts["out_features"]) == (8, 8), f"layer.{name} is not (8, 8)")
            expect(layer_facts["bias"], f"layer.{name} has no bias with bias=True")
        facts = r.facts(h_no_bias, "MultiHeadAttention(8, 2, bias=False)")
        for name in PROJECTIONS:
            layer_facts = facts["layers"][name]
            expect(layer_facts["linear"] and not layer_facts["bias"], f"with bias=False, layer.{name} has a bias")
        expect_value_error(r, h_visible_error, "MultiHeadAttention(10, 3)", patterns=(r"\b10\b", r"\b3\b"))
        for E, H, h in h_errors:
            expect_value_error(r, h, f"MultiHeadAttention({E}, {H})", patterns=(rf"\b{E}\b", rf"\b{H}\b"))
        for E, H, bias, h in configs:
            label = f"MultiHeadAttention({E}, {H}, bias={bias})"
            facts = r.facts(h, label)
            expect(all(facts["layers"][n]["linear"] for n in PROJECTIONS), f"{label}: a projection is not an nn.Linear")
            expect(facts["shared"] == [0, 1, 2, 3], f"{label}: W_q, W_k, W_v and W_o are not four different layers")
            count = sum(math.prod(shape) for _, shape in facts["parameters"])
            expected = 4 * E * E + (4 * E if bias else 0)
            expect(count == expected, f"{label} has {count} parameters, expected {expected}")

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
        comparisons.add("Self-attention", embed_dim=E, num_heads=H, B=B, Tq=T, bias=bias)

    def judge(r):
        out, weights = r.tensor_pair(h_plain, "layer(x, x, x)")
        expect(tuple(out.shape) == (2, 5, 8), f"out has shape {tuple(out.shape)}, expected (2, 5, 8)")
        expect(tuple(weights.shape) == (2, 2, 5, 5), f"weights have shape {tuple(weights.shape)}, expected (2, 2, 5, 5)")
        sums = weights.sum(dim=-1)
        expect(torch.allclose(sums, torch.ones_like(sums), atol=1e-5), "each query's weights do not sum to 1")
        _, weights = r.tensor_pair(h_identity, "layer(x, x, x) with W_q and W_k the identity")
        d = 4
        for h in range(2):
            x_h = x[..., h * d:(h + 1) * d]
            expect(weights.shape == (2, 2, 5, 5) and torch.allclose(
                weights[:, h], torch.softmax(x_h @ x_h.transpose(-2, -1) / d**0.5, dim=-1), atol=1e-5),
                f"with W_q and W_k the identity, head {h}'s weights are not softmax(x_h x_h^T / sqrt(4))")
        for name, h in zeroed:
            out, weights = r.tensor_pair(h, f"layer(x, x, x) with {name} zero")
            if name == "W_v":
                expected = params["W_o.bias"].expand(2, 5, 8)
                expect(out.shape == expected.shape and torch.allclose(out, expected, atol=1e-6),
                       "with W_v zero, out is not W_o's bias")
            else:
                expect(torch.allclose(weights, torch.full_like(weights, 1 / 5), atol=1e-6),
                       f"with {name} zero, the weights are not uniform")
        comparisons.judge(r)

    return judge


def test_mask(p):
    x = p.randn(2, 5, 8)
    params = layer_weights(p, 8, True)
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    layer.set(params)
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    h_causal = layer.call(x, x, x, mask=causal)
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
        comparisons.add("Causal self-attention", embed_dim=16, num_heads=H, B=3, Tq=6, bias=bias, mask=mask,
                        attn_mask=~mask)
    for B, Tq, Tk, H in [(3, 4, 7, 2), (2, 5, 5, 4), (4, 2, 6, 1)]:
        lengths = torch.from_numpy(rng.integers(1, Tk + 1, size=B))
        lengths[0] = Tk
        keep_ = torch.arange(Tk) < lengths[:, None]
        comparisons.add("Padding mask (B, 1, 1, Tk)", embed_dim=8, num_heads=H, B=B, Tq=Tq, Tk=Tk,
                        mask=keep_[:, None, None, :], key_padding_mask=~keep_)
    B, H, Tq, Tk = 2, 3, 4, 6
    mask = torch.rand(B, H, Tq, Tk, generator=gen) > 0.5
    mask[..., int(rng.integers(0, Tk))] = True
    comparisons.add("Mask per sequence and head (B, H, Tq, Tk)", embed_dim=12, num_heads=H, B=B, Tq=Tq, Tk=Tk,
                    mask=mask, attn_mask=~mask.reshape(B * H, Tq, Tk))
    mask = torch.rand(B, 1, 5, 5, generator=gen) > 0.4
    mask |= torch.eye(5, dtype=torch.bool)
    comparisons.add("Mask per sequence (B, 1, Tq, Tk)", embed_dim=12, num_heads=4, B=B, Tq=5, mask=mask,
                    attn_mask=~mask.expand(B, 4, 5, 5).reshape(B * 4, 5, 5))

    def judge(r):
        _, weights = r.tensor_pair(h_causal, "layer(x, x, x, mask=causal)")
        expect(tuple(weights.shape) == (2, 2, 5, 5), f"weights with a causal mask have shape {tuple(weights.shape)}")
        expect(bool(torch.isfinite(weights).all()), "the weights with a causal mask contain NaN")
        expect(weights.masked_select(~causal).abs().max() <= 1e-6, "with a causal mask a query attends to a later key")
        sums = weights.sum(dim=-1)
        expect(torch.allclose(sums, torch.ones_like(sums), atol=1e-5), "with a mask the weights do not sum to 1")
        out, weights = r.tensor_pair(h_pad, "layer(x, x, x, mask=pad_mask)")
        expect(tuple(weights.shape) == (2, 2, 5, 5), f"weights with a padding mask have shape {tuple(weights.shape)}")
        expect(weights[1, :, :, 3:].abs().max() < 1e-6, "a query attends to padding")
        out_other, _ = r.tensor_pair(h_other, "layer(x, other, other, mask=pad_mask)")
        expect(out_other.shape == out.shape and torch.allclose(out_other, out, atol=1e-5),
               "the keys and values stored in the padding change the output")
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
    keep_ = torch.arange(6) >= 6 - torch.tensor([6, 4, 1])[:, None]
    comparisons.add("Left padding under a causal mask", embed_dim=12, num_heads=3, B=3, Tq=6,
                    mask=torch.tril(torch.ones(6, 6, dtype=torch.bool)) & keep_[:, None, None, :])
    keep_ = torch.tensor([[True] * 5, [True, True, False, False, False], [False] * 5])
    comparisons.add("Cross-attention with an empty sequence", embed_dim=8, num_heads=2, B=3, Tq=4, Tk=5, bias=False,
                    mask=keep_[:, None, None, :])
    mask_ = torch.rand(2, 4, 5, 6, generator=p.gen) > 0.5
    mask_[0, 1, 2] = False
    mask_[0, 0, 2, 3] = True
    mask_[1, 3, 0] = False
    mask_[1, 2, 0, 1] = True
    comparisons.add("Mask per sequence and head, rows empty in some heads", embed_dim=16, num_heads=4, B=2, Tq=5,
                    Tk=6, mask=mask_)
    comparisons.add("A mask that allows no key at all", embed_dim=8, num_heads=2, B=2, Tq=3,
                    mask=torch.zeros(3, 3, dtype=torch.bool))

    def judge(r):
        out, weights = r.tensor_pair(h_visible, "layer(x, x, x, mask=mask) with two fully masked queries")
        expect(tuple(out.shape) == (2, 4, 8), f"out has shape {tuple(out.shape)}, expected (2, 4, 8)")
        expect(tuple(weights.shape) == (2, 2, 4, 4), f"weights have shape {tuple(weights.shape)}, expected (2, 2, 4, 4)")
        blocked = weights[1, :, :2]
        expect(not bool(torch.isnan(blocked).any()), "a query with no allowed key got NaN weights")
        expect(blocked.abs().max() <= 1e-6, "a query with no allowed key got non-zero weights")
        held = effective_params(params, PROJECTIONS, r.facts(h_facts, "MultiHeadAttention(8, 2)"))
        got = out[1, :2]
        expect(not bool(torch.isnan(got).any()), "out is NaN for a query with no allowed key")
        expect(torch.allclose(got, held["W_o.bias"].expand_as(got), atol=1e-6),
               "out for a query with no allowed key is not W_o's bias")
        sums = weights.sum(dim=-1)[mask.any(dim=-1).expand(2, 2, 4)]
        expect(not bool(torch.isnan(sums).any()), "a query with an allowed key got NaN weights")
        expect(torch.allclose(sums, torch.ones_like(sums), atol=1e-5), "the weights of a query with a key do not sum to 1")
        comparisons.judge(r)

    return judge


def test_cross_attention(p):
    params = layer_weights(p, 8, True)
    layer = p.module("MultiHeadAttention", embed_dim=8, num_heads=2)
    layer.set(params)
    query, key, value = p.randn(2, 3, 8), p.randn(2, 6, 8), p.randn(2, 6, 8)
    h_cross = layer.call(query, key, value)
    h_values = layer.call(query, key, 2 * value + 1)
    comparisons = Comparisons(p)
    for B, Tq, Tk, E, H, bias in [(3, 2, 7, 12, 3, True), (1, 5, 1, 8, 4, False), (2, 4, 9, 16, 1, True),
                                  (2, 6, 3, 16, 8, True), (4, 1, 5, 6, 2, True)]:
        comparisons.add("Cross-attention", embed_dim=E, num_heads=H, B=B, Tq=Tq, Tk=Tk, bias=bias)
    lengths = torch.from_numpy(p.rng.integers(1, 8, size=3))
    lengths[0] = 7
    keep = torch.arange(7) < lengths[:, None]
    comparisons.add("Cross-attention with padding", embed_dim=12, num_heads=2, B=3, Tq=4, Tk=7, bias=False,
                    mask=keep[:, None, None, :], key_padding_mask=~keep)

    def judge(r):
        out, weights = r.tensor_pair(h_cross, "forward with 3 queries and 6 keys")
        expect(tuple(out.shape) == (2, 3, 8), f"out for 3 queries and 6 keys has shape {tuple(out.shape)}")
        expect(tuple(weights.shape) == (2, 2, 3, 6), f"weights for 3 queries and 6 keys have shape {tuple(weights.shape)}")
        _, weights_v = r.tensor_pair(h_values, "forward with other values")
        expect(weights_v.shape == weights.shape and torch.allclose(weights_v, weights, atol=1e-6),
               "changing only the values changed the weights")
        comparisons.judge(r)

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
