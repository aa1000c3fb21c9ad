# exercise: graph-lifetime/log-losses
# bug: appends the loss tensor, keeping each graph alive
# named-by: item\(\)|graph
history = []
for xb, yb in batches:
    loss = ((xb @ w - yb) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
    history.append(loss)
