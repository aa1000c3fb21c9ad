# exercise: training-loop/train-step
# bug: never calls opt.step()
# named-by: step\(\)
def train_step(model, opt, loss_fn, xb, yb):
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    return loss.item()


losses = [train_step(model, opt, loss_fn, X, y) for _ in range(30)]
