# exercise: training-loop/train-step
# bug: zero_grad between backward and step
# named-by: between
def train_step(model, opt, loss_fn, xb, yb):
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.zero_grad()
    opt.step()
    return loss.item()


losses = [train_step(model, opt, loss_fn, X, y) for _ in range(30)]
