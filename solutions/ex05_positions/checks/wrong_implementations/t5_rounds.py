# The logarithmic fraction is rounded to the nearest bucket instead of truncated.
# caught by a visible test
# %% patch: t5_relative_bucket
-    wide = (exact + (fraction * (half - exact)).long()).clamp(max=half - 1)
+    wide = (exact + (fraction * (half - exact)).round().long()).clamp(max=half - 1)
