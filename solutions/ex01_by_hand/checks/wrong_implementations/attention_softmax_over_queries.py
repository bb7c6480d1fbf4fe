# Takes the softmax of the transposed scores, so each key's weights over the queries sum to 1, not each query's.
# caught by a visible test
# %% patch: self_attention
-    A = softmax(scale_scores(attention_scores(Q, K), Q.shape[-1]))
+    A = softmax(scale_scores(attention_scores(Q, K), Q.shape[-1]).T).T
