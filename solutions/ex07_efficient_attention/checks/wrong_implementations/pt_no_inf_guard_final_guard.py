# Measures from the running maximum without a guard, but guards the final division with l > 0: after a first tile of nothing but padding, exp(-inf + inf) is NaN, and the guard turns it into zeros for queries that do have keys.
# caught by a visible test
# cause: flash_nan_guard_zeros
# %% patch: padded_tiled_attention
-            base = torch.where(new_max == float("-inf"), 0.0, new_max)  # all padding so far: measure from 0
+            base = new_max

-        pieces.append(run_out / torch.where(run_sum == 0, 1.0, run_sum))  # no key at all: 0 / 1 = 0
+        pieces.append(torch.where(run_sum > 0, run_out / run_sum, 0.0))
