# working_head keeps the last of the heads that share the largest drop, not the first.
# cause: not_first_of_ties
# %% patch: ablation
-    first_largest = int(torch.argmax(drops.flatten()))  # the largest signed drop; the first of equal maxima
+    flat = drops.flatten()
+    first_largest = max(i for i in range(len(flat)) if flat[i] == flat.max())
