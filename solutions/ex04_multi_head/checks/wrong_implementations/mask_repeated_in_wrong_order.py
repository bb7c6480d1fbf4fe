# Heads folded into the batch as (B*H, ...), but the mask copied with repeat (head-major order): sequence b, head h gets another sequence's mask whenever B > 1 and H > 1.
# caught by a visible test
# %% patch: multi_head_attention
-            scores = scores.masked_fill(~mask, float("-inf"))
+            B, H, Tq, Tk = scores.shape
+            folded = mask.expand(B, 1, Tq, Tk).reshape(B, Tq, Tk).repeat(H, 1, 1)  # (B*H, Tq, Tk)
+            scores = scores.reshape(B * H, Tq, Tk).masked_fill(~folded, float("-inf")).reshape(B, H, Tq, Tk)
