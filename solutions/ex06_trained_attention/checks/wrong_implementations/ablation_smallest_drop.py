# working_head picks the head with the smallest drop: the one the model needs least.
# caught by a visible test
# cause: smallest_drop
# %% patch: ablation
-    first_largest = int(torch.argmax(drops.flatten()))  # the largest signed drop; the first of equal maxima
+    first_largest = int(torch.argmin(drops.flatten()))
