# The position embedding is looked up with the token ids, pos_emb(tokens), instead of the positions 0 .. T-1.
# caught by a visible test
# %% patch: attention_only_model
-        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(T))  # (B, T, D)
+        x = self.tok_emb(tokens) + self.pos_emb(tokens)  # (B, T, D)
