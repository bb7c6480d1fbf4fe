# The cache starts from empty tensors rather than None (torch.cat skips an empty 1-D tensor, so the appends still work).
# caught by a visible test
# %% cell: kv_cache
class KVCache:
    def __init__(self):
        self.keys = torch.tensor([])
        self.values = torch.tensor([])

    def append(self, k, v):
        self.keys = torch.cat([self.keys, k], dim=-2)
        self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def __len__(self):
        return self.keys.shape[-2] if self.keys.dim() > 1 else 0
