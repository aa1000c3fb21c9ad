# exercise: autograd/vector-output
# bug: backpropagates from the mean, so every gradient is 1/3 of dy/dx
# named-by: mean where a sum|1/3
y.mean().backward()
