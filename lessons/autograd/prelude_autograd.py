import collections

import torch


# The checks' helpers. A gradient typed in by hand looks like one backward() computed, so
# the checks ask whether backward() went through a tensor's graph: the graphs backward()
# started from are remembered (the last few, by their root node). Nothing else of autograd
# changes: an in-place change to a saved tensor still raises.
def _remember_backward_roots():
    backward = torch.autograd.backward
    roots = getattr(backward, "_roots", None)
    if roots is not None:  # already remembering (this prelude ran before in this kernel)
        return roots
    roots = collections.deque(maxlen=32)

    def remembering(tensors, *args, **kwargs):
        for t in [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or ()):
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                roots.append(t.grad_fn)
        return backward(tensors, *args, **kwargs)

    remembering._roots = roots
    remembering.__doc__, remembering.__wrapped__ = backward.__doc__, backward
    torch.autograd.backward = remembering
    return roots


_BACKWARD_ROOTS = _remember_backward_roots()


def _nodes(root):
    seen, todo = set(), [root]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        todo += [child for child, _ in node.next_functions]


def _backward_ran(t):
    # Only a backward() that started from t's graph, or from a graph that uses t, counts:
    # torch.autograd.grad() frees saved tensors too, and gradients it returned that are
    # then set by hand are not what backward() left in .grad.
    if t.grad_fn is None:
        return False
    return any(node is t.grad_fn for root in list(_BACKWARD_ROOTS) for node in _nodes(root))
