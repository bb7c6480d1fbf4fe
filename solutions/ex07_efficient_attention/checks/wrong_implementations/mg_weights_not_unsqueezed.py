# Multiplies the (..., Tq) weights into the (..., Tq, d_v) outputs without a last axis of size 1 (transposing the outputs instead): it fails where Tq != d_v, and where Tq == d_v it weighs the wrong entries.
# cause: merge_broadcast_axis
# %% patch: merge_partials
-    weight_a = (share_a / total).unsqueeze(-1)                     # (..., Tq, 1): a part's share of all the weight
-    weight_b = (share_b / total).unsqueeze(-1)
-    return weight_a * out_a + weight_b * out_b, lse
+    weight_a = (share_a / total)
+    weight_b = (share_b / total)
+    if out_a.shape[-1] != out_a.shape[-2]:
+        weight_a, weight_b = weight_a.unsqueeze(-1), weight_b.unsqueeze(-1)
+    return weight_a * out_a + weight_b * out_b, lse
