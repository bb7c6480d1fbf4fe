# forward embeds the tokens only, with no position embedding: every position holding the same token looks the same, and the previous-token task cannot be learned.
# caught by a visible test
# %% patch: attention_only_model
-        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(T))  # (B, T, D)
+        x = self.tok_emb(tokens)  # (B, T, D)
