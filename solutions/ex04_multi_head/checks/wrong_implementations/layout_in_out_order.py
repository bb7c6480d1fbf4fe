# Stores k_proj_weight and v_proj_weight as (kdim, E) and (vdim, E), the (in, out) order of the formulas, instead of nn.Linear's (out, in).
# caught by a visible test
# cause: weight_in_out_order
# %% patch: multihead_weights
-            self.k_proj_weight = nn.Parameter(torch.empty(embed_dim, self.kdim))
-            self.v_proj_weight = nn.Parameter(torch.empty(embed_dim, self.vdim))
+            self.k_proj_weight = nn.Parameter(torch.empty(self.kdim, embed_dim))
+            self.v_proj_weight = nn.Parameter(torch.empty(self.vdim, embed_dim))

# %% patch: multihead_cross_attention
-            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
+            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight.T, self.v_proj_weight.T
