# exercise: training-loop/train-step
# bug: returns the loss tensor (graph kept) instead of .item()
# named-by: item\(\)
def train_step(model, opt, loss_fn, xb, yb):
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
    return loss


losses = [train_step(model, opt, loss_fn, X, y) for _ in range(30)]
