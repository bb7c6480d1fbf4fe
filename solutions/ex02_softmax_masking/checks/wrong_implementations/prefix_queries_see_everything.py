# Lets the prompt's queries see every key instead of every prompt key: the prompt reads the continuation it must predict.
# caught by a visible test
# cause: prefix_hidden
# %% patch: prefix_lm_mask
-    in_prompt = cols < prefix_len                # (1, n): prompt keys, seen by every query
+    in_prompt = rows < prefix_len
