# exercise: linear-init/port-weights
# bug: copies W without transposing (nn.Linear stores (out, in))
# named-by: transpose|swapped|\.T
with torch.no_grad():
    layer.weight.copy_(W)
    layer.bias.copy_(b)
