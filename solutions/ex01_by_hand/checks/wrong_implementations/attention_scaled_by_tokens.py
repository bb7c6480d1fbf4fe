# Scales by the square root of the number of tokens (K.shape[0]) instead of the key width d_k (K.shape[1]).
# caught by a visible test
# %% patch: self_attention
-    A = softmax(scale_scores(attention_scores(Q, K), Q.shape[-1]))
+    A = softmax(scale_scores(attention_scores(Q, K), K.shape[0]))
