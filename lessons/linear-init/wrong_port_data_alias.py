# WRONG: assigns .data = W.T, so layer.weight is now a (non-contiguous) VIEW of the caller's W: every optimizer step on the layer rewrites W, and edits to W change the layer
layer.weight.data = W.T
layer.bias.data = b
