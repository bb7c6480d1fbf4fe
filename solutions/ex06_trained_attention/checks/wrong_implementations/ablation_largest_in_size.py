# working_head picks the head whose drop is largest in size, so a head whose removal helps the model most can be named the working head.
# cause: largest_in_size
# %% patch: ablation
-    first_largest = int(torch.argmax(drops.flatten()))  # the largest signed drop; the first of equal maxima
+    first_largest = int(torch.argmax(drops.flatten().abs()))
