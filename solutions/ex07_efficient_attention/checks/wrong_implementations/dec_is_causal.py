# decode_step calls F.scaled_dot_product_attention with is_causal=True: with a single query its mask keeps key 0 only.
# caught by a visible test
# %% patch: decode_step
-    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (..., 1, t): no mask, all is past
-    return torch.softmax(scores, dim=-1) @ values                  # (..., 1, d_v)
+    return F.scaled_dot_product_attention(q, keys, values, is_causal=True)
