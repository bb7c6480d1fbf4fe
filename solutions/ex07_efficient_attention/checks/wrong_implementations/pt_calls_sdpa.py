# Calls F.scaled_dot_product_attention with the padding mask as attn_mask, and zeros the queries that have no key.
# caught by a visible test
# cause: flash_calls_built_in
# %% cell: padded_tiled_attention
def padded_tiled_attention(q, k, v, key_padding_mask, block_size, causal=False):
    allowed = ~key_padding_mask[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    return torch.where(allowed.any(dim=-1, keepdim=True), out, 0.0).nan_to_num(0.0)
