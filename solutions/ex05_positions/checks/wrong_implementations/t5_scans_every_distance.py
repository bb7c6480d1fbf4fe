# Every distance from 0 to max_distance is put through T5's rule at once and the first of each bucket read off: right for small max_distance, but a tensor of 10**12 distances does not fit in memory.
# cause: bucket_every_distance
# %% cell: t5_bucket_starts
def t5_bucket_starts(bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    distances = torch.arange(max_distance + 1)                     # every distance up to max_distance
    past = t5_relative_bucket(-distances, bidirectional, num_buckets, max_distance)
    starts = torch.full((num_buckets,), -1, dtype=torch.long)
    for b in range(n):
        hits = (past == b).nonzero()
        if len(hits):
            starts[b] = distances[hits[0, 0]]
    if bidirectional:
        ahead = t5_relative_bucket(distances, bidirectional, num_buckets, max_distance)
        for b in range(n, num_buckets):
            hits = (ahead == b).nonzero()
            if len(hits):
                starts[b] = distances[hits[0, 0]]
    return starts
