# Measures from max(lse_a, lse_b) without a guard: two empty parts (both -inf) give -inf - (-inf) = NaN.
# caught by a visible test
# cause: merge_both_empty_nan
# %% patch: merge_partials
-    top = torch.where(top == float("-inf"), 0.0, top)              # both parts empty: measure from 0
-    share_a = torch.exp(lse_a - top)                               # (..., Tq), e^(lse_a - top) <= 1: no overflow
+    share_a = torch.exp(lse_a - top)                               # (..., Tq), e^(lse_a - top) <= 1: no overflow

-    total = torch.where(total == 0, 1.0, total)                    # there the output is 0, not 0 / 0
