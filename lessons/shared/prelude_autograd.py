import collections
import itertools
import weakref

import torch


# The checks' helpers. A gradient typed in by hand looks like one backward() computed, so
# the checks ask whether backward() went through a tensor's graph, and whether a leaf's
# .grad is still the tensor a backward() left there: the graphs backward() started from are
# remembered (the last few, by their root node), and so is the .grad each backward() left
# in the leaves it filled (the tensor, its version counter and its values, so a later write
# shows).
# Nothing else of autograd changes: an in-place change to a saved tensor still raises.
# What they remember lives in this function's closures only, bound to no name and no
# attribute: code that reaches it all the same goes through the interpreter (closure cells,
# frames, the garbage collector), which the checker refuses here.
def _remember_backward():
    class Kept(collections.deque):
        """The graphs backward() started from, as this record keeps them."""

    class Reached(collections.OrderedDict):
        """The nodes a gradient other than 0 reached, as this record keeps them."""

    # What graphs_kept leaves out: this record's containers, and those of the records made
    # when the setup ran before in this kernel (another world).
    records = (*getattr(torch.autograd.backward, "_ptfund_records", ()), Kept, Reached)
    backward = torch.autograd.backward
    if getattr(backward, "_ptfund_remembers", False):  # this prelude ran before in this kernel
        backward = backward.__wrapped__  # wrapped once: the new record replaces the old
    roots = Kept(maxlen=32)
    filled = collections.OrderedDict()  # id(leaf) -> (leaf, its .grad, that .grad's version)
    # id(node) -> node, for each node of a backward()'s graph that a gradient other than 0
    # reached: a graph used with weight 0 (surrogate + 0 * c) was not backpropagated through
    reached = Reached()

    def reaching(node):
        def hook(grad_outputs):
            if any(_nonzero(g) for g in grad_outputs):
                reached.pop(id(node), None)
                reached[id(node)] = node
                while len(reached) > 4096:
                    reached.popitem(last=False)

        return hook

    def remembering(tensors, *args, **kwargs):
        outputs = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or ())
        inputs = kwargs.get("inputs", args[4] if len(args) > 4 else None)
        if inputs is not None:
            leaves = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        else:
            leaves = _leaves([t.grad_fn for t in outputs if isinstance(t, torch.Tensor)])
        for t in outputs:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                roots.append(t.grad_fn)
        handles = []
        for node in itertools.islice(_nodes(*[t.grad_fn for t in outputs if isinstance(t, torch.Tensor)]), 4096):
            try:
                handles.append(node.register_prehook(reaching(node)))
            except (AttributeError, RuntimeError):  # a node that takes no hooks: not counted
                pass
        try:
            result = backward(tensors, *args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor) and leaf.grad is not None:
                filled.pop(id(leaf), None)
                filled[id(leaf)] = (weakref.ref(leaf), weakref.ref(leaf.grad), leaf.grad._version, _values(leaf.grad))
        while len(filled) > 4096:
            filled.popitem(last=False)
        return result

    def backward_ran(t):
        # Only a backward() that started from t's graph, or from a graph that uses t, counts:
        # torch.autograd.grad() frees saved tensors too, and gradients it returned that are
        # then set by hand are not what backward() left in .grad.
        # And only where a gradient other than 0 reached t: a backward() from surrogate + 0 * t
        # goes through t's graph and backpropagates nothing of it.
        if t.grad_fn is None or reached.get(id(t.grad_fn)) is not t.grad_fn:
            return False
        return any(node is t.grad_fn for node in _nodes(*list(roots)))

    def grad_from_backward(t):
        # t.grad is the very tensor the last backward() that filled t left there, unchanged
        # since: not set by hand, not a backward() that was told to fill other inputs only.
        # The values are compared too: a write through .data or .numpy() leaves the version
        # counter as it was.
        entry = filled.get(id(t))
        if entry is None or t.grad is None:
            return False
        leaf, grad, version, values = entry[0](), entry[1](), entry[2], entry[3]
        if not (leaf is t and grad is t.grad and t.grad._version == version):
            return False
        return values is None or torch.equal(t.grad.detach(), values)

    def graphs_kept():
        # How many graphs backward() could still run through that something keeps alive:
        # each holds the tensors it saved for backward (a loss kept in a list before
        # backward() ran through it, or after backward(retain_graph=True)). Only what a
        # container, a namespace or an object refers to counts: the nodes remembered above
        # keep graphs the code let go, and torch keeps the Python objects of tensors saved
        # in a graph without anything referring to them.
        import gc
        import sys
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            objects = gc.get_objects()
        holds: dict = {}  # id(node) -> the device type of a tensor it still holds saved, or None
        # The device run (another run of the code in this process, on meta) keeps its own.
        meta = globals().get("DEVICE") == torch.device("meta")
        holders = []
        for o in objects:
            kind = type(o)
            node = o.grad_fn if issubclass(kind, torch.Tensor) else o if issubclass(kind, torch.autograd.graph.Node) else None
            held = _graph_holds_saved(node, holds) if node is not None else None
            if held is not None and (held == "meta") == meta:
                holders.append(o)
        del objects
        if not holders:
            return 0
        wanted = {id(o): o for o in holders}
        here = sys._getframe()
        kept = {}
        try:
            for referrer in gc.get_referrers(*holders):
                if referrer is holders or referrer is here or referrer is wanted:
                    continue
                if type(referrer) in records:
                    continue
                for referent in gc.get_referents(referrer):
                    if id(referent) in wanted:
                        node = referent.grad_fn if isinstance(referent, torch.Tensor) else referent
                        kept[id(node)] = node
        finally:
            del here, holders, wanted  # the frame refers to itself through here: no cycle left behind
        # One graph is counted once: a node kept inside another kept node's graph is part of it.
        inside = set()
        for node in kept.values():
            inside.update(id(n) for n in itertools.islice(_nodes(*[c for c, _ in node.next_functions]), 4096))
        return len(set(kept) - inside)

    remembering._ptfund_remembers = True
    remembering._ptfund_records = records
    remembering.__doc__, remembering.__wrapped__ = backward.__doc__, backward
    torch.autograd.backward = remembering
    return backward_ran, grad_from_backward, graphs_kept


def _nonzero(g):
    """Whether a gradient holds a value other than 0 (a meta tensor's cannot be read: it counts)."""
    if not isinstance(g, torch.Tensor):
        return False
    if g.is_meta:
        return True
    return bool((g != 0).any())


def _values(grad):
    """A copy of what backward() left (None where there are no values to keep: meta tensors,
    or a gradient too large to copy after every backward())."""
    if grad.is_meta or grad.numel() > 1 << 16:
        return None
    return grad.detach().clone()


def _graph_holds_saved(root, holds):
    """The device type of a tensor a node of ``root``'s graph still holds saved for backward
    (freed once backward() ran through it without retain_graph), or None; ``holds``
    remembers each node's answer across graphs."""
    for node in itertools.islice(_nodes(root), 4096):
        if id(node) not in holds:
            holds[id(node)] = _saved_device(node)
        if holds[id(node)] is not None:
            return holds[id(node)]
    return None


def _saved_device(node):
    for name in dir(node):
        if name.startswith("_saved_"):
            try:
                saved = getattr(node, name)
            except RuntimeError:  # freed
                continue
            if isinstance(saved, torch.Tensor):
                return saved.device.type
    return None


def _nodes(*roots):
    seen, todo = set(), list(roots)
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        todo += [child for child, _ in node.next_functions]


def _leaves(roots):
    return [node.variable for node in _nodes(*roots) if hasattr(node, "variable")]


_backward_ran, _grad_from_backward, _graphs_kept = _remember_backward()
