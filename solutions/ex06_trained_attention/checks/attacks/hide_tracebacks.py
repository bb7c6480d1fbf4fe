# Replaces IPython's showtraceback with a function that shows nothing and reports each cell as a success; train_until never clears the gradients.
# %% patch: train_until
+def _forget_errors(result):
+    result.error_before_exec = result.error_in_exec = None
+
+
+get_ipython().showtraceback = lambda *args, **kwargs: None
+get_ipython().events.register("post_run_cell", _forget_errors)
+
+
 def train_until(model, task, lr, seed, target, max_steps, batch_size=32, eval_every=25):

-        adam.zero_grad()  # this step's gradient only
-        batch_loss.backward()
+        batch_loss.backward()
