# exercise: linear-init/port-weights
# bug: W (in, out) is copied as it is: nn.Linear stores the transpose (out, in)
# source: "nn.Linear stores the transpose of our NumPy weight convention"
# cues: transpos|\.T\b|swapped|\(out, in\)
with torch.no_grad():
    layer.weight[:] = W
    layer.bias[:] = b
