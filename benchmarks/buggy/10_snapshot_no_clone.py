# exercise: graph-lifetime/snapshot-weights
# bug: detach without clone: the snapshot shares memory and follows the update
# named-by: clone|shares
before = layer.weight.detach()
loss = layer(x).pow(2).mean()
opt.zero_grad()
loss.backward()
opt.step()
