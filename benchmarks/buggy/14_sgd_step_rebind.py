# exercise: in-place/sgd-step
# bug: rebinding w instead of updating in place
# named-by: in place|same tensor|no_grad|w_at_start|leaf
w = w - 0.1 * w.grad
w.grad = None
