# Uses the keys as values (V = X W_k), a copy-and-paste slip.
# caught by a visible test
# %% cell: self_attention
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = project(X, W_q), project(X, W_k), project(X, W_k)
    A = softmax(scale_scores(attention_scores(Q, K), Q.shape[1]))
    return A @ V, A
