# Weights the values with A transposed (Z = A^T V): the by-hand sheets' column convention mixed into the row convention.
# caught by a visible test
# %% cell: self_attention
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = project(X, W_q), project(X, W_k), project(X, W_v)
    A = softmax(scale_scores(attention_scores(Q, K), Q.shape[1]))
    return A.T @ V, A
