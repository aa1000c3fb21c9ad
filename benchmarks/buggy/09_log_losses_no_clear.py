# exercise: graph-lifetime/log-losses
# bug: never clears w.grad, so gradients pile up
# named-by: accumulat|add up|zero_grad|w.grad = None|clear
history = []
for xb, yb in batches:
    loss = ((xb @ w - yb) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    history.append(loss.item())
