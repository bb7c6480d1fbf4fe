# The optimiser never clears the gradients: each step's gradient is added to the sum of all earlier ones.
# caught by a visible test
# %% patch: train
-        optimizer.zero_grad()  # clear the gradients of the step before
-        loss.backward()
+        loss.backward()
