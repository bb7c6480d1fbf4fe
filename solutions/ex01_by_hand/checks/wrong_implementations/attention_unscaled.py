# self_attention skips the scaling step, even though scale_scores is correct.
# caught by a visible test
# %% cell: self_attention
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = project(X, W_q), project(X, W_k), project(X, W_v)
    A = softmax(attention_scores(Q, K))
    return A @ V, A
