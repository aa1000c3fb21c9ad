# exercise: graph-lifetime/snapshot-weights
# bug: clone without detach: still part of the graph
# named-by: detach
before = layer.weight.clone()
loss = layer(x).pow(2).mean()
opt.zero_grad()
loss.backward()
opt.step()
