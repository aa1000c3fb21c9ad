# exercise: graph-lifetime/constant-statistic
# bug: the statistic is computed with a graph, so gradients flow through it
# named-by: no_grad|detach|graph
scale = (x @ w).std(dim=0)
loss = ((x @ w) / scale).pow(2).mean()
loss.backward()
