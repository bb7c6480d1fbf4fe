# Merges the two parts by averaging their outputs, as if each held half of the weight, and adds their lse values.
# caught by a visible test
# cause: merge_averaged
# %% cell: merge_partials
def merge_partials(out_a, lse_a, out_b, lse_b):
    return (out_a + out_b) / 2, lse_a + lse_b
