# The optimiser never clears the gradients: each step's gradient is added to the sum of all earlier ones.
# caught by a visible test
# cause: no_zero_grad
# %% patch: train_until
-        adam.zero_grad()  # this step's gradient only
-        batch_loss.backward()
+        batch_loss.backward()
