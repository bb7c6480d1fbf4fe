# Chapter 8's train (cell 27), its loop run until max_steps, with a stop at the first evaluation that reaches the target.
# %% cell: train_until
def train_until(model, task, lr, seed, target, max_steps, batch_size=32, eval_every=25):
    torch.manual_seed(seed)
    for module in model.modules():  # fresh weights, the same for a seed
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    batches = torch.Generator().manual_seed(seed)
    eval_set = task(torch.Generator().manual_seed(10_000 + seed), 500)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = {"step": [], "loss": [], "accuracy": []}
    for step in range(max_steps + 1):
        if step % eval_every == 0 or step == max_steps:
            with torch.no_grad():
                loss, acc = loss_and_accuracy(model, eval_set)
            history["step"].append(step)
            history["loss"].append(loss.item())
            history["accuracy"].append(acc.item())
            if acc.item() >= target:
                return history
        if step == max_steps:
            return history
        loss, _ = loss_and_accuracy(model, task(batches, batch_size))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
