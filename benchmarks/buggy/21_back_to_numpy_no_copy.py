# exercise: numpy-bridge/back-to-numpy
# bug: the NumPy array shares memory with the tensor on the CPU
# named-by: copy|shares
scores_np = scores.detach().cpu().numpy()
with torch.no_grad():
    scores.zero_()
