"""The checks of ex06_trained_attention (PyTorch), one per graded test cell: written once.

`make release` writes each test cell's hidden tests from its check
(tools/hidden_tests.py): nbgrader runs them in the kernel on fixed inputs,
and verification (tools/verify.py) runs them outside it on inputs drawn
afresh for every grading run. A failed check's message is what the student
reads in the feedback: which function, on what input, how far off and the
likely cause, never the expected numbers. Training is what takes time: in
the kernel (``p.in_kernel``) a check leaves out the runs that its cell's
visible part has just trained and judged, and the run drawn afresh (fixed
there, it would prove nothing), so that the kernel trains each model once.

Everything is float64, as in the notebook (its set-up cell makes float64 the
default dtype in the sandbox; here every tensor names its dtype, so that the
grader's own default is never changed).

- ``AttentionOnlyModel`` is built in the sandbox, which reports its parameters'
  names and shapes; the grader copies its own weights into them, by the names
  of the documented layout, and compares the logits and the attention weights
  with the model computed here from its definition (``reference_model``), to
  within the hidden tests' 1e-10, on the hidden tests' sizes and on a size
  drawn afresh for each run.
- ``loss_and_accuracy`` is given logits drawn here, through the notebook's
  ``FixedLogits``, and both numbers are compared with the cross-entropy and
  the accuracy computed here (1e-10 for the loss, 1e-6 for the accuracy, as
  the hidden tests).
- ``train`` trains the notebook's ``LookBackModel`` (through its locked helper
  ``record_training``, which also records the model's logits on a probe at
  every evaluation). The grader trains the same model with the loop the task
  describes (``look_back_training``): the same seeded weights, batches,
  evaluation set and Adam steps. The history and every recorded logit must
  agree to within the hidden tests' 1e-6, for the visible run, the hidden
  tests' runs and a run whose seed, batch size, interval and learning rate
  are drawn afresh.
- ``train_previous_token_model`` is called in the sandbox and the trained
  model is run on 500 sequences drawn here (``run_model``); the accuracy and
  each head's mean weight on the previous position are computed here from
  what comes back: at least 95 % and 0.8 on the visible and hidden tests'
  sizes and seeds. One more vocabulary, length and seed, drawn afresh for
  each run among the sizes the task promises (8 to 32 token ids, 6 to 16
  positions) and unlike the tests' own, must reach 80 % and 0.5: a model that learns does far better, and
  answers made for the tests' sizes only (weights written by hand, or pasted
  in) do not come close.
"""

import math

import torch
import torch.nn.functional as F

from tools.verification.probes import Nested, RequiresGrad, as_tensor, close_torch, expect

F64 = torch.float64


# --- section 1: the model ----------------------------------------------------------------------------------------


def parameter_shapes(V, D, L, C):
    shapes = {"tok_emb.weight": (V, D), "pos_emb.weight": (C, D), "unembed.weight": (V, D), "unembed.bias": (V,)}
    shapes.update({f"layers.{i}.{n}.weight": (D, D) for i in range(L) for n in ("W_q", "W_k", "W_v", "W_o")})
    return shapes


def reference_model(params, tokens, num_heads, num_layers):
    """The attention-only model from its definition: logits (B, T, V) and per-layer weights (B, H, T, T)."""
    B, T = tokens.shape[0], tokens.shape[1]
    x = params["tok_emb.weight"][tokens] + params["pos_emb.weight"][:T]  # (B, T, D)
    D = x.shape[-1]
    d = D // num_heads
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    per_layer = []
    for i in range(num_layers):
        q, k, v = (
            (x @ params[f"layers.{i}.{n}.weight"].T).view(B, T, num_heads, d).transpose(1, 2)
            for n in ("W_q", "W_k", "W_v")
        )  # (B, H, T, d)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~causal, float("-inf"))
        w = torch.softmax(scores, dim=-1)  # (B, H, T, T)
        heads = (w @ v).transpose(1, 2).reshape(B, T, D)
        x = x + heads @ params[f"layers.{i}.W_o.weight"].T
        per_layer.append(w)
    return x @ params["unembed.weight"].T + params["unembed.bias"], per_layer


def test_attention_only_model(p):
    configs = [(7, 8, 2, 2, 8, 3, 5), (16, 32, 2, 1, 12, 4, 12), (7, 12, 3, 3, 9, 2, 5), (20, 8, 1, 2, 4, 3, 4),
               (5, 6, 6, 2, 7, 2, 1), (11, 16, 4, 2, 10, 1, 9)]
    H = int(p.rng.choice([1, 2, 4]))  # a size drawn afresh
    C = int(p.rng.integers(2, 13))
    configs.append((int(p.rng.integers(3, 30)), H * int(p.rng.integers(2, 9)), H, int(p.rng.integers(1, 4)), C,
                    int(p.rng.integers(1, 5)), int(p.rng.integers(1, C + 1))))
    cases = []
    for V, D, H, L, C, B, T in configs:
        shapes = parameter_shapes(V, D, L, C)
        params = {name: p.randn(*shape, scale=1 / math.sqrt(shape[-1]) if len(shape) == 2 else 1.0, dtype=F64)
                  for name, shape in shapes.items()}
        tokens = torch.randint(V, (B, T), generator=p.gen)
        model = p.module("AttentionOnlyModel", V, D, H, L, C)
        facts = model.facts()
        model.set(params)
        handle = model.call(tokens)
        label = f"AttentionOnlyModel({V}, {D}, {H}, {L}, {C}) on tokens of shape ({B}, {T})"
        cases.append((label, shapes, facts, handle, reference_model(params, tokens, H, L), L))

    def judge(r):
        for label, shapes, facts, handle, (ref_logits, ref_weights), L in cases:
            own = dict(r.facts(facts, label)["parameters"])
            expect(own == shapes, f"The parameters of {label} should be those of the table of section 1 "
                   f"(missing: {sorted(set(shapes) - set(own))}, extra: {sorted(set(own) - set(shapes))}, other "
                   f"shapes: {sorted(n for n in set(own) & set(shapes) if own[n] != shapes[n])}).")
            logits, weights = r.pair(handle, label)
            close_torch(as_tensor(logits, label), ref_logits, atol=1e-10, rtol=1e-10, what="The logits", on=label,
                        cause="They are compared with the model computed from its definition, atol=rtol=1e-10: "
                              "causal attention layers, each adding its output to its input, then unembed.")
            expect(isinstance(weights, (list, tuple)) and len(weights) == L,
                   f"The weights of {label} should be a list of the {L} layers' attention weights; they are "
                   + (f"a {type(weights).__name__} of length {len(weights)}." if isinstance(weights, (list, tuple))
                      else "not a list."))
            for i, (w, ref_w) in enumerate(zip(weights, ref_weights)):
                close_torch(as_tensor(w, label), ref_w, atol=1e-10, rtol=1e-10, what=f"The weights of layer {i}",
                            on=label, cause="They are compared with softmax(q k^T / sqrt(d)) under the causal mask, "
                                            "atol=rtol=1e-10.")

    return judge


# --- section 2: loss and accuracy --------------------------------------------------------------------------------


def reference_loss_and_accuracy(logits, targets, scored):
    loss = F.cross_entropy(logits[scored], targets[scored], reduction="mean")
    accuracy = (logits.argmax(dim=-1)[scored] == targets[scored]).to(F64).mean()
    return loss, accuracy


def as_number(value, what):
    """A tensor holding one number (0-dim tensors arrive as shape (1,)), as a 0-dim float64 tensor."""
    got = as_tensor(value, what)
    expect(got.numel() == 1, f"{what} should be a tensor holding one number; it has shape {tuple(got.shape)}.")
    return got.reshape(()).to(F64)


def test_loss_and_accuracy(p):
    targets = torch.tensor([[4, 1, 3, 2], [2, 4, 1, 3]])
    scored = torch.tensor([[False, True, True, True], [False, True, True, True]])
    right = 20.0 * F.one_hot(targets, 5).to(F64)
    mixed = right.clone()
    mixed[:, 0] = 20.0 * F.one_hot((targets[:, 0] + 1) % 5, 5).to(F64)
    half = mixed.clone()
    half[0, 1:] = 20.0 * F.one_hot((targets[0, 1:] + 1) % 5, 5).to(F64)
    cases = [("all logits equal", torch.zeros(2, 4, 5, dtype=F64), targets, scored),
             ("logits right everywhere, every position counting", right, targets, torch.ones(2, 4, dtype=torch.bool)),
             ("logits wrong only at position 0", mixed, targets, scored),
             ("logits right at half the positions that count", half, targets, scored)]
    for B, T, V in [(3, 7, 11), (1, 9, 4), (5, 2, 30), (4, 6, 6), (2, 12, 16),
                    (int(p.rng.integers(1, 6)), int(p.rng.integers(2, 13)), int(p.rng.integers(2, 33)))]:
        logits = p.randn(B, T, V, scale=3.0, dtype=F64)
        t = torch.randint(V, (B, T), generator=p.gen)
        s = torch.rand(B, T, generator=p.gen) < 0.6
        s[0, -1] = True
        logits[s] += 2 * F.one_hot(t[s], V).to(F64)
        cases.append((f"random logits of shape ({B}, {T}, {V})", logits, t, s))
    probes = []
    for label, logits, t, s in cases:
        batch = (torch.zeros(t.shape, dtype=torch.long), t, s)
        handle = p.call("loss_and_accuracy", Nested("FixedLogits", logits), batch)
        gradient = None
        if label.startswith("random"):  # the gradient of the loss with respect to the logits
            gradient = p.grad("loss_and_accuracy", Nested("FixedLogits", RequiresGrad(logits)), batch,
                              weight=torch.tensor(1.0, dtype=F64), wrt=None, item=0)
            leaf = logits.clone().requires_grad_(True)
            reference_loss_and_accuracy(leaf, t, s)[0].backward()
            gradient = (gradient, leaf.grad)
        probes.append((label, handle, reference_loss_and_accuracy(logits, t, s), gradient))

    def judge(r):
        for label, handle, (ref_loss, ref_accuracy), gradient in probes:
            loss, accuracy = r.pair(handle, f"loss_and_accuracy on {label}")
            close_torch(as_number(loss, f"The loss on {label}"), ref_loss, atol=1e-10, rtol=1e-10,
                        what="The loss", on=label,
                        cause="It is compared with the cross-entropy of the positions that count, averaged, "
                              "atol=rtol=1e-10.")
            close_torch(as_number(accuracy, f"The accuracy on {label}"), ref_accuracy, atol=1e-6, rtol=0,
                        what="The accuracy", on=label,
                        cause="It is compared with the share of right predictions among the positions that count, "
                              "atol=1e-6 (a float32 accuracy is fine).")
            if gradient is not None:
                handle, ref_gradient = gradient
                error = r.raised(handle)
                expect(error is None, f"On {label}, the loss cannot be backpropagated to the logits ({error}): "
                                      "compute it with tensor operations on the logits (no .item(), no .detach(), "
                                      "no torch.no_grad()).")
                got = r.value(handle, f"The gradient of the loss on {label}")
                expect(got is not None, f"On {label}, the loss is not connected to the logits, so loss.backward() "
                                        "could not train the model.")
                close_torch(as_tensor(got, label), ref_gradient, atol=1e-10, rtol=1e-10,
                            what="The gradient of the loss with respect to the logits", on=label,
                            cause="(atol=rtol=1e-10) The logits of the positions that do not count should get no "
                                  "gradient.")

    return judge


# --- section 3: the training loop ---------------------------------------------------------------------------------


def previous_token_batch(gen, batch_size, V, T):
    """The notebook's make_previous_token_task(V, T)(gen, batch_size)."""
    tokens = torch.randint(V, (batch_size, T), generator=gen)
    scored = torch.ones(batch_size, T, dtype=torch.bool)
    scored[:, :1] = False
    return tokens, tokens.roll(1, dims=1), scored


def look_back_training(V, C, steps, lr, seed, batch_size, eval_every, probe):
    """The notebook's LookBackModel trained by the loop of section 3, here: the history's three lists and the
    logits on ``probe`` at every evaluation. The global random state is used only inside fork_rng, as the
    notebook's torch.manual_seed(seed) and reset_parameters() use it, and is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        tables = [torch.nn.Embedding(V, V, dtype=F64), torch.nn.Embedding(C, V, dtype=F64)]
        torch.manual_seed(int(seed))
        for table in tables:
            table.reset_parameters()

    def model(tokens):
        T = tokens.shape[1]
        previous = tables[0](tokens.roll(1, dims=1)) * (torch.arange(T) > 0)[:, None]
        return previous + tables[1](torch.arange(T))

    def measure(batch):
        return reference_loss_and_accuracy(model(batch[0]), batch[1], batch[2])

    train_batches = torch.Generator().manual_seed(seed)
    eval_set = previous_token_batch(torch.Generator().manual_seed(10_000 + seed), 500, V, C)
    adam = torch.optim.Adam([t.weight for t in tables], lr=lr)
    history, recorded = ([], [], []), []
    for step in range(0, steps + 1):
        if not step % eval_every:
            with torch.no_grad():
                loss, accuracy = measure(eval_set)
                recorded.append(model(probe))
            for column, value in zip(history, (step, loss.item(), accuracy.item())):
                column.append(value)
        if step >= steps:
            return history, recorded
        loss, _ = measure(previous_token_batch(train_batches, batch_size, V, C))
        adam.zero_grad()
        loss.backward()
        adam.step()


def test_train(p):
    runs = [(6, 8, 20, 0.05, 1, 4, 5), (6, 8, 10, 0.0, 1, 4, 5), (7, 9, 24, 0.02, 3, 8, 4), (5, 6, 30, 0.1, 11, 16, 10),
            (9, 5, 12, 0.005, 40, 2, 3), (4, 7, 0, 0.1, 8, 3, 5)]
    every = int(p.rng.integers(2, 8))  # a run drawn afresh
    runs.append((int(p.rng.integers(3, 12)), int(p.rng.integers(3, 12)), every * int(p.rng.integers(1, 5)),
                 float(p.rng.choice([0.01, 0.02, 0.05, 0.1])), int(p.rng.integers(0, 100_000)),
                 int(p.rng.integers(2, 17)), every))
    if p.in_kernel:  # the visible part has trained the first two; the run drawn afresh is fixed there
        runs = runs[2:-1]
    cases = []
    for V, C, steps, lr, seed, batch_size, eval_every in runs:
        # Every token id at every position: the logits pin down every trained weight.
        probe = torch.arange(V)[:, None].expand(V, C).contiguous()
        handle = p.call("record_training", Nested("LookBackModel", V, C), Nested("make_previous_token_task", V, C),
                        steps, lr, seed, probe, batch_size=batch_size, eval_every=eval_every)
        label = (f"LookBackModel({V}, {C}) trained for {steps} steps with lr={lr}, seed={seed}, "
                 f"batch_size={batch_size}, eval_every={eval_every}")
        cases.append((label, handle, look_back_training(V, C, steps, lr, seed, batch_size, eval_every, probe)))

    def judge(r):
        for label, handle, ((steps, losses, accuracies), recorded) in cases:
            got = r.value(handle, label)
            expect(isinstance(got, tuple) and len(got) == 4, f"{label}: record_training did not return its 4 lists.")
            got_steps, got_losses, got_accuracies, got_logits = got
            expect(list(got_steps) == steps, f"{label}: the history's steps should be 0, eval_every, ..., steps "
                                             f"({len(steps)} evaluations); they are not.")
            for name, values, ref in [("loss", got_losses, losses), ("accuracy", got_accuracies, accuracies)]:
                expect(isinstance(values, list) and all(type(v) is float for v in values),
                       f"{label}: history['{name}'] should hold Python floats (.item() of the tensor).")
                close_torch(torch.tensor(values, dtype=F64), torch.tensor(ref, dtype=F64), atol=1e-6, rtol=1e-6,
                            what=f"history['{name}']", on=label,
                            cause="It is compared with a reference loop, atol=rtol=1e-6; if section 2's tests fail, "
                                  "fix them first.")
            expect(isinstance(got_logits, list) and len(got_logits) == len(recorded),
                   f"{label}: watch(model, step) should be called once at every evaluation; it was called "
                   f"{len(got_logits) if isinstance(got_logits, list) else 0} times for {len(recorded)} evaluations.")
            for step, value, ref in zip(steps, got_logits, recorded):
                close_torch(as_tensor(value, label), ref, atol=1e-6, rtol=1e-6,
                            what=f"The model's logits at the evaluation of step {step}", on=label,
                            cause="They are compared, for every token id at every position, with those of the same "
                                  "model trained by a reference loop, atol=rtol=1e-6: the trained weights differ.")

    return judge


# --- section 4: the trained model ---------------------------------------------------------------------------------


def test_trained_model(p):
    runs = [(13, 9, 0, 0.95, 0.8), (12, 10, 5, 0.95, 0.8), (24, 7, 2, 0.95, 0.8)]
    fresh = (13, 9)
    while fresh in {(V, C) for V, C, *_ in runs}:  # a size the tests do not use
        fresh = (int(p.rng.integers(8, 33)), int(p.rng.integers(6, 17)))
    runs.append((*fresh, int(p.rng.integers(0, 100_000)), 0.8, 0.5))
    if p.in_kernel:  # the visible part has trained and judged the first; the run drawn afresh is fixed there
        runs = runs[1:-1]
    cases = []
    for V, C, seed, least_accuracy, least_weight in runs:
        tokens, targets, scored = previous_token_batch(p.gen, 500, V, C)
        handle = p.call("run_model", Nested("train_previous_token_model", V, C, seed), tokens)
        label = f"train_previous_token_model({V}, {C}, seed={seed})"
        cases.append((label, V, C, targets, scored, least_accuracy, least_weight, handle))

    def judge(r):
        for label, V, C, targets, scored, least_accuracy, least_weight, handle in cases:
            logits, weights = r.pair(handle, label)
            logits = as_tensor(logits, label)
            expect(tuple(logits.shape) == (500, C, V), f"{label}: the logits for tokens of shape (500, {C}) should "
                                                      f"have shape (500, {C}, {V}); they have shape "
                                                      f"{tuple(logits.shape)}.")
            accuracy = (logits.argmax(dim=-1) == targets)[scored].to(F64).mean().item()
            expect(accuracy >= least_accuracy, f"{label}: on 500 new sequences the trained model is right "
                   f"{100 * accuracy:.1f} % of the time, below {100 * least_accuracy:.0f} %. If the tests of sections "
                   "1 to 3 pass, train for more steps, or with a larger learning rate; and build the model and the "
                   "task for the vocab_size and context_len given.")
            expect(isinstance(weights, (list, tuple)) and len(weights) > 0,
                   f"{label}: the trained model returned no attention weights.")
            best = 0.0
            for w in weights:
                w = as_tensor(w, label)
                expect(w.dim() == 4 and tuple(w.shape[-2:]) == (C, C) and w.shape[0] == 500,
                       f"{label}: the attention weights should have shape (500, H, {C}, {C}); they have shape "
                       f"{tuple(w.shape)}.")
                best = max(best, w.diagonal(-1, dim1=-2, dim2=-1).mean(dim=(0, 2)).max().item())
            expect(best >= least_weight, f"{label}: no head puts {least_weight} of its weight on the previous "
                   f"position on average (the best: {best:.2f}). Train longer, so that a head settles on the "
                   "previous position.")

    return judge


CHECKS = {
    "test_attention_only_model": test_attention_only_model,
    "test_loss_and_accuracy": test_loss_and_accuracy,
    "test_train": test_train,
    "test_trained_model": test_trained_model,
}
