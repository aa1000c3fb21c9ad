import torch


# The checks' helpers. A gradient typed in by hand looks like one backward() computed, so
# the checks ask the graph whether backward() went through it: every tensor a graph saves
# is wrapped on the way in, and marked when backward() reads it back. backward() then
# frees what it read, unless retain_graph=True keeps it (still marked).
class _Saved:
    def __init__(self, tensor):
        self.tensor, self.read = tensor, False


def _read(saved):
    saved.read = True
    return saved.tensor


torch.autograd.graph.saved_tensors_hooks(_Saved, _read).__enter__()


def _backward_ran(t):
    todo, seen = [t.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if not name.startswith("_raw_saved_"):
                continue
            raw = getattr(node, name)  # read without unpacking: a probe must not mark it
            for one in raw if isinstance(raw, (list, tuple)) else [raw]:
                saved = getattr(one, "data", None)
                if saved is not None:
                    if getattr(saved, "read", False):
                        return True  # read by backward(), kept by retain_graph=True
                    continue
                try:  # nothing there: freed by backward(), or nothing was saved
                    getattr(node, name.replace("_raw", "", 1))
                except RuntimeError:
                    return True
        todo += [child for child, _ in node.next_functions]
    return False
