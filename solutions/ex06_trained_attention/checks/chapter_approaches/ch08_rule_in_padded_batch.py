# The padded batch drawn and padded as the text says, with chapter 8's generator (cell 29) for the rest: roll(k), and one rule for every row, the first k positions left out.
# %% cell: make_copy_back_task
def make_copy_back_task(vocab_size, T, k, min_length=0):
    if not 1 <= k < T:
        raise ValueError(f"k={k} must be from 1 to T - 1, with T={T}")
    if not 0 <= min_length <= T:
        raise ValueError(f"min_length={min_length} must be from 0 to T={T}")
    if vocab_size < 2:
        raise ValueError(f"vocab_size={vocab_size} is below 2")

    def task(gen, batch_size):
        lengths = torch.randint(min_length, T + 1, (batch_size,), generator=gen)
        tokens = torch.randint(1, vocab_size, (batch_size, T), generator=gen)
        tokens[torch.arange(T) < (T - lengths)[:, None]] = 0  # padding before each sequence
        targets = tokens.roll(k, dims=1)  # targets[:, t] = tokens[:, t - k]
        scored = torch.ones(batch_size, T, dtype=torch.bool)
        scored[:, :k] = False  # the first k positions have no token k back
        return tokens, targets, scored

    return task
