# Scales by the square root of the model width (d_model) instead of the key width d_k.
# caught by a visible test
# %% cell: self_attention
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = project(X, W_q), project(X, W_k), project(X, W_v)
    A = softmax(scale_scores(attention_scores(Q, K), np.shape(X)[1]))
    return A @ V, A
