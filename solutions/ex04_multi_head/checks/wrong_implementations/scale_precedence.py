# Scale written as head_dim ** 1/2, which Python reads as head_dim / 2: right only when head_dim is 4.
# caught by a visible test
# %% patch: multi_head_attention
-        scores = q @ k.transpose(-2, -1) / self.head_dim**0.5  # (B, H, Tq, Tk)
+        scale = self.head_dim ** 1/2
+        scores = q @ k.transpose(-2, -1) / scale  # (B, H, Tq, Tk)
