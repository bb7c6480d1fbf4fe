# The cache keeps its chunks in a list that is a class attribute: every KVCache shares one list, and a new cache already holds what another appended.
# caught by a visible test
# %% cell: kv_cache
class KVCache:
    chunks = []

    def __init__(self):
        self.keys = self.values = None
        if self.chunks:
            self.keys = torch.cat([k for k, _ in self.chunks], dim=-2)
            self.values = torch.cat([v for _, v in self.chunks], dim=-2)

    def append(self, k, v):
        self.chunks.append((k, v))
        self.keys = torch.cat([k for k, _ in self.chunks], dim=-2)
        self.values = torch.cat([v for _, v in self.chunks], dim=-2)
        return self.keys, self.values

    def __len__(self):
        return sum(k.shape[-2] for k, _ in self.chunks)
