def fit(xs, ys, w, b, lr, steps):
    losses = []
    for _ in range(steps):
        loss = Engine(0.0)
        for x, y in zip(xs, ys):
            d = w * Engine(x) + b + Engine(-y)
            loss = d * d + loss
        loss = Engine(1.0 / len(xs)) * loss
        w.grad = 0.0  # backward adds into .grad: clear the last step's first
        b.grad = 0.0
        loss.backward()
        w.data -= lr * w.grad
        b.data -= lr * b.grad
        losses.append(loss.data)
    return losses
