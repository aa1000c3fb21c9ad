# exercise: autograd/clear-first
# bug: backward without clearing the earlier gradient
# named-by: accumulat|zero_grad|clear|add up
loss = ((w * x) ** 2).sum()
loss.backward()
