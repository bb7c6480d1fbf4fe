# A float attn_mask added to the raw scores before the division by sqrt(E), where the layer adds it to the scaled scores.
# caught by a visible test
# cause: mask_before_scale
# %% patch: like_torch
-    logits = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(width)        # (B, Tq, Tk)
+    logits = torch.bmm(q, k.transpose(1, 2))
+    if attn_mask is not None and attn_mask.dtype != torch.bool:
+        logits = logits + attn_mask
+    logits = logits / math.sqrt(width)

-            logits = logits + attn_mask                                 # added after the scaling
+            pass
