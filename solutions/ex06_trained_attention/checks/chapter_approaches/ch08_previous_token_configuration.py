# Chapter 8's model and training for the previous-token task (cell 31): AttentionOnlyModel(V, 32, 2, 1, T), 200 steps of the given train at lr 1e-3, evaluated every 10 steps.
# %% cell: train_copy_back_model
def train_copy_back_model(task, vocab_size, context_len, seed):
    model = AttentionOnlyModel(vocab_size, d_model=32, num_heads=2, num_layers=1, context_len=context_len)
    train(model, task, 200, 1e-3, seed=seed, eval_every=10)
    return model
