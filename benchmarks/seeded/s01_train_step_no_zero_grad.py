# exercise: training-loop/train-step
# bug: gradients accumulate across steps: optimizer.zero_grad() is never called
# source: "Missing optimizer.zero_grad() lets gradients accumulate across steps"
# cues: zero_grad|accumulat|add up|adds? to \.grad
def train_step(model, opt, loss_fn, xb, yb):
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
    return float(loss)


losses = []
for _ in range(30):
    losses.append(train_step(model, opt, loss_fn, X, y))
