# exercise: training-loop/train-step
# bug: never clears the gradients
# named-by: zero_grad
def train_step(model, opt, loss_fn, xb, yb):
    logits = model(xb)
    loss = loss_fn(logits, yb)
    loss.backward()
    opt.step()
    return loss.item()


losses = [train_step(model, opt, loss_fn, X, y) for _ in range(30)]
