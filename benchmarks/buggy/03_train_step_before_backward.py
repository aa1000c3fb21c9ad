# exercise: training-loop/train-step
# bug: opt.step() before loss.backward()
# named-by: step\(\) before|before .*backward
def train_step(model, opt, loss_fn, xb, yb):
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    opt.step()
    loss.backward()
    return loss.item()


losses = [train_step(model, opt, loss_fn, X, y) for _ in range(30)]
