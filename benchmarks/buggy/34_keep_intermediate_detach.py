# exercise: autograd/keep-intermediate
# bug: a detach cuts the graph
# named-by: detach|cut
h = (x * 3).detach().requires_grad_()
y = (h ** 2).sum()
y.backward()
