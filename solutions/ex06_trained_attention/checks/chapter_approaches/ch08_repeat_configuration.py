# Chapter 8's model and training for the repeated sequences (cell 47): AttentionOnlyModel(V, 32, 2, 2, T), 800 steps of the given train at lr 3e-3.
# %% cell: train_copy_back_model
def train_copy_back_model(task, vocab_size, context_len, seed):
    model = AttentionOnlyModel(vocab_size, d_model=32, num_heads=2, num_layers=2, context_len=context_len)
    train(model, task, 800, 3e-3, seed=seed)
    return model
