# Chapter 8's ablate_head and accuracy (cell 58) and its loop over every head (cell 63), the working head by an argmax of the drops.
# %% cell: ablation
import contextlib


@contextlib.contextmanager
def ablate_head(model, layer, head):
    mha = model.layers[layer]
    rows = slice(head * mha.head_dim, (head + 1) * mha.head_dim)
    saved = mha.W_v.weight[rows].clone()
    with torch.no_grad():
        mha.W_v.weight[rows] = 0.0
    try:
        yield model
    finally:
        with torch.no_grad():
            mha.W_v.weight[rows] = saved


def accuracy(model, batch):
    with torch.no_grad():
        return loss_and_accuracy(model, batch)[1].item()


def ablation_drops(model, batch):
    full = accuracy(model, batch)
    drops = torch.zeros(len(model.layers), model.layers[0].num_heads)
    for layer in range(len(model.layers)):
        for h in range(model.layers[0].num_heads):
            with ablate_head(model, layer, h):
                drops[layer, h] = full - accuracy(model, batch)
    return drops


def working_head(model, batch):
    drops = ablation_drops(model, batch)
    layer, head = divmod(int(drops.flatten().argmax()), drops.shape[1])
    return layer, head
