# exercise: autograd/keep-intermediate
# bug: h is not a leaf and retain_grad() is never called
# named-by: retain_grad
h = x * 3
y = (h ** 2).sum()
y.backward()
