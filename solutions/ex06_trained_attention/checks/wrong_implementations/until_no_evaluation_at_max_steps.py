# The loop evaluates only at multiples of eval_every: when max_steps is not one, the trained model is never measured.
# caught by a visible test
# cause: no_evaluation_at_max_steps
# %% patch: train_until
-        if step % eval_every == 0 or step == max_steps:
+        if step % eval_every == 0:
