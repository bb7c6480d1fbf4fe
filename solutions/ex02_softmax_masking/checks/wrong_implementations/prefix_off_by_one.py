# Counts the prompt as keys 0 to prefix_len inclusive: the first token of the continuation leaks to the prompt.
# caught by a visible test
# cause: prefix_hidden
# %% patch: prefix_lm_mask
-    in_prompt = cols < prefix_len                # (1, n): prompt keys, seen by every query
+    in_prompt = cols <= prefix_len
