# exercise: in-place/saved-tensor
# bug: in-place scaling of a tensor autograd saved
# named-by: in-place
h = torch.sigmoid(x @ w)
h *= 2
loss = h.sum()
loss.backward()
