# optimizer.zero_grad() is called between loss.backward() and optimizer.step(): every step sees zero gradients, and the weights never move.
# caught by a visible test
# %% patch: train
-        optimizer.zero_grad()  # clear the gradients of the step before
-        loss.backward()
-        optimizer.step()
+        loss.backward()
+        optimizer.zero_grad()
+        optimizer.step()
