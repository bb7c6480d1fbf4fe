# Stands in -1000 for the lse of an empty part, since e^-1000 is 0 anyway: beside a part whose lse is near -1000 the empty part takes half the weight.
# cause: merge_empty_part
# %% patch: merge_partials
-    top = torch.maximum(lse_a, lse_b)                              # (..., Tq): the larger of the two sums' logs
+    both_empty = torch.isinf(lse_a) & torch.isinf(lse_b)
+    lse_a = torch.where(torch.isinf(lse_a), -1000.0, lse_a)         # e^-1000 is 0: as good as -inf
+    lse_b = torch.where(torch.isinf(lse_b), -1000.0, lse_b)
+    top = torch.maximum(lse_a, lse_b)                              # (..., Tq): the larger of the two sums' logs

-    return weight_a * out_a + weight_b * out_b, lse
+    lse = torch.where(both_empty, float("-inf"), lse)
+    return torch.where(both_empty.unsqueeze(-1), 0.0, weight_a * out_a + weight_b * out_b), lse
