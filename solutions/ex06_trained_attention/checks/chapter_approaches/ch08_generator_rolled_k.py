# Chapter 8's generator (cell 29, previous_token_task) with roll(k) for roll(1) and the first k positions left out; min_length is taken and ignored.
# %% cell: make_copy_back_task
def make_copy_back_task(vocab_size, T, k, min_length=0):
    if not 1 <= k < T:
        raise ValueError(f"k={k} must be from 1 to T - 1, with T={T}")

    def task(gen, batch_size):
        tokens = torch.randint(vocab_size, (batch_size, T), generator=gen)
        targets = tokens.roll(k, dims=1)  # targets[:, t] = tokens[:, t - k]
        scored = torch.ones(batch_size, T, dtype=torch.bool)
        scored[:, :k] = False  # the first k positions have no token k back
        return tokens, targets, scored

    return task
