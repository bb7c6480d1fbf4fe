# Combines the two rules with & instead of |: only prompt keys that are also not ahead survive.
# caught by a visible test
# cause: prefix_hidden
# %% patch: prefix_lm_mask
-    return (cols <= rows) | in_prompt
+    return (cols <= rows) & in_prompt
