# Writes the merged lse as lse_a + softplus(lse_b - lse_a), guarding only two empty parts: when part A alone is empty, -inf + inf is NaN.
# cause: merge_one_empty_nan
# %% cell: merge_partials
def merge_partials(out_a, lse_a, out_b, lse_b):
    both_empty = torch.isinf(lse_a) & torch.isinf(lse_b)           # (..., Tq)
    gap = torch.where(both_empty, 0.0, lse_b - lse_a)             # how much heavier part B is, in log
    weight_a = torch.sigmoid(-gap)                                 # e^lse_a / (e^lse_a + e^lse_b)
    lse = lse_a + F.softplus(gap)                                  # log(e^lse_a + e^lse_b)
    lse = torch.where(both_empty, float("-inf"), lse)
    out = weight_a.unsqueeze(-1) * out_a + (1 - weight_a).unsqueeze(-1) * out_b
    return torch.where(both_empty.unsqueeze(-1), 0.0, out), lse
