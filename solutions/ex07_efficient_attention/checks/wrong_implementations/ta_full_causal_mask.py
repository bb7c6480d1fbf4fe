# Causal tiled attention builds the whole (T, T) causal mask up front and slices a tile out of it each time: a tensor as large as the score matrix.
# caught by a visible test
# %% patch: tiled_attention
     Tq, Tk = q.shape[-2], k.shape[-2]
+    allowed = torch.ones(Tq, Tk, dtype=torch.bool).tril()          # (Tq, Tk), True where j <= i

-                i = torch.arange(i0, i0 + s.shape[-2])[:, None]    # (bq, 1) query positions
-                j = torch.arange(j0, j0 + s.shape[-1])[None, :]    # (1, bk) key positions
-                s = s.masked_fill(j > i, float("-inf"))
+                tile = allowed[i0:i0 + s.shape[-2], j0:j0 + s.shape[-1]]
+                s = s.masked_fill(~tile, float("-inf"))
