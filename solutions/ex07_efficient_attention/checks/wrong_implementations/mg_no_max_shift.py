# Exponentiates the lse values themselves, e^lse_a and e^lse_b: right for small scores, inf and NaN once lse is near 1000.
# caught by a visible test
# cause: merge_overflow
# %% cell: merge_partials
def merge_partials(out_a, lse_a, out_b, lse_b):
    sum_a, sum_b = torch.exp(lse_a), torch.exp(lse_b)
    total = sum_a + sum_b
    out = (sum_a / total).unsqueeze(-1) * out_a + (sum_b / total).unsqueeze(-1) * out_b
    return out, torch.log(total)
