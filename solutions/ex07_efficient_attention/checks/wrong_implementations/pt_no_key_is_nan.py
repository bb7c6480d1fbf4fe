# Divides the running output by the running sum everywhere: a query with no key at all (a sequence of padding) gets 0 / 0 = NaN instead of zeros.
# caught by a visible test
# cause: flash_nan_no_keys
# %% patch: padded_tiled_attention
-        pieces.append(run_out / torch.where(run_sum == 0, 1.0, run_sum))  # no key at all: 0 / 1 = 0
+        pieces.append(run_out / run_sum)
