# The mask read the wrong way round: scores are blocked where the mask is True (may attend) instead of where it is False.
# caught by a visible test
# %% patch: sdpa
-        logits = logits.masked_fill(~mask, float("-inf"))
-        any_allowed = mask.any(dim=-1, keepdim=True)                  # (..., Tq or 1, 1)
+        logits = logits.masked_fill(mask, float("-inf"))
+        any_allowed = (~mask).any(dim=-1, keepdim=True)
