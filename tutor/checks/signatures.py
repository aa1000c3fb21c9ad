"""Built-in mistake signatures: classic bugs recognised from what a check saw.

A check that spots one calls ``Context.note`` with one of these messages; they are listed
in the result's ``mistakes`` after the exercise's own.
"""

import re

from .describe import fmt_int, plural


def accumulation(name: str, k: int, passes: int, before: bool) -> str:
    """Said only when the trace shows ``passes`` >= k backward passes with no zero_grad()
    between (``before``: the first of them ran before the code, its gradient left in .grad)."""
    if before:
        how = (
            "your code's backward() adds onto a gradient already there (from a backward() before your code "
            "ran), and nothing cleared it"
        )
        fix = f"clear it before backward(): {name} = None, or zero_grad() in a training loop"
        return f"gradients accumulated: {name} is {k}x the expected gradient: {how}; {fix}"
    return (
        f"gradients accumulated: {name} is {k}x the expected gradient, and your code calls backward() "
        f"{passes} times without clearing the gradients in between; clear them with zero_grad() (or "
        f"optimizer.zero_grad()) before each backward"
    )


def maybe_accumulated(name: str, k: int) -> str:
    """The trace shows backward() called more than once, but not k times in a row uncleared."""
    return (
        f"{name} is {k}x the expected gradient, consistent with gradients added up over {k} backward() calls "
        f"that nothing cleared in between (zero_grad() before each backward clears them)"
    )


class Scaled(str):
    """A sentence saying a result is exactly k (or 1/k) times the expected one, which is a
    fact; a cause is added only where the context shows k is a count of values (Context.absorb)."""

    name: str
    k: int
    up: bool  # k times (else 1/k)
    exact: bool = True  # within float rounding; else within 0.1% (a trajectory that drifted a little)


def exact_factor(name: str, k: int, up: bool) -> Scaled:
    how = f"exactly {k} times" if up else f"exactly 1/{k} of"
    out = Scaled(f"{name} is {how} the expected value")
    out.name, out.k, out.up = name, k, up
    return out


class Ratio(str):
    """A sentence saying a result is exactly p/q of the expected one (p, q >= 2, no whole
    factor), a fact; a cause is added only where one tensor in play has both sizes
    (Context.absorb): a divisor q where p was meant, the number of classes for the number of
    examples."""

    name: str
    p: int
    q: int


def exact_ratio(name: str, p: int, q: int) -> Ratio:
    out = Ratio(f"{name} is exactly {p}/{q} of the expected value")
    out.name, out.p, out.q = name, p, q
    return out


def ratio_reading(sentence: str, name: str, p: int, q: int) -> Ratio:
    """``sentence`` (a reading of a constant factor) for a factor that is exactly p/q."""
    out = Ratio(sentence)
    out.name, out.p, out.q = name, p, q
    return out


def ratio_of_sizes(name: str, p: int, q: int, where: str) -> str:
    return (
        f"{name} is exactly {p}/{q} of the expected value, consistent with a divisor {q} where {p} was meant (or a "
        f"count of {q} where one of {p} was meant): {where}"
    )


def divisor_off_by_one(name: str, p: int, q: int, size: str) -> str:
    """``name`` is p/q of the expected value where q is one off a count p seen in play. Which
    way the count is off is not established: a value may grow or shrink with its divisor."""
    off = f"{q} is {p} - 1" if q < p else f"{q} is {p} + 1"
    such = (
        "n - 1 where n was meant, or n where n - 1 was (a sample variance's correction added or dropped)"
        if q < p
        else "n + 1 where n was meant, or n where n + 1 was"
    )
    return (
        f"{name} is exactly {p}/{q} of the expected value, consistent with a count off by one ({p} is {size}, "
        f"and {off}): {such}?"
    )


def near_factor(sentence: str, name: str, k: int, up: bool) -> Scaled:
    """A reading of ``name`` as k (or 1/k) times the expected value within 0.1%."""
    out = Scaled(sentence)
    out.name, out.k, out.up, out.exact = name, k, up, False
    return out


def factor_of_a_size(name: str, k: int, up: bool, size: str, grad: bool = False, exact: bool = True) -> str:
    """``size`` names where the count k comes from ("the size of x's dimension 0")."""
    if grad:
        return (
            f"{name} is {k}x the expected gradient, consistent with a loss summed over {k} values where their mean "
            f"was meant ({k} is {size}): .sum() where .mean() (or reduction='mean') was meant?"
        )
    # The count matches a size, which is all that is established: the same numbers come from
    # a divisor (or a count) that is off by that factor, whatever the reduction.
    exactly = "exactly " if exact else ""
    if up:
        return (
            f"{name} is {exactly}{k} times the expected value, consistent with a sum where a mean over {k} values "
            f"was meant, or a divisor {k} times too small ({k} is {size})"
        )
    return (
        f"{name} is {exactly}1/{k} of the expected value, consistent with a mean over {k} values where their sum "
        f"was meant, or a divisor {k} times too large, such as a count that includes what should not count "
        f"({k} is {size})"
    )


def plain_tensor(path: str) -> str:
    return (
        f"{path} is a plain tensor attribute: it is not in state_dict and does not move with .to(); "
        f"use register_buffer (or nn.Parameter if it should be trained)"
    )


def never_registered(name: str, path: str, cls: str) -> str:
    leaf = path.rpartition(".")[2]
    return (
        f"{name} has no {path} at all, where the reference's {name} holds it as a buffer: {cls}.__init__ never "
        f'registers it; add self.register_buffer("{leaf}", ...) there'
    )


def hooks_left(name: str, mine: int, theirs: int) -> str:
    return (
        f"{name} still holds {plural(mine, 'hook')} where the reference's holds {fmt_int(theirs)}: consistent with a "
        f"hook registered and never removed (or registered twice); keep the handle each register_..._hook call "
        f"returns and call handle.remove() when you are done"
    )


def plain_modules(path: str, container: str, layers: int, counted: int, total: int) -> str:
    fix = "nn.ModuleDict" if container == "dict" else "nn.ModuleList"
    verb = "is" if layers == 1 else "are"
    if total and counted == total:  # registered too, under other names (add_module, another attribute)
        return (
            f"{path} is a plain {container}: its {plural(layers, 'layer')} {verb} registered only under other "
            f"names, so state_dict() and named_parameters() have no {path.split('.')[-1]}.* entries; use {fix}"
        )
    return (
        f"{path} is a plain {container}: its {plural(layers, 'layer')} {verb} not registered "
        f"({fmt_int(counted)} of their {plural(total, 'parameter')} are counted); use {fix}"
    )


def reordered(name: str, dims: tuple) -> str:
    how = f"dimensions {dims[0]} and {dims[1]} swapped" if len(dims) == 2 else f"its dimensions permuted as {dims}"
    return (
        f"{name} holds the right values in the wrong order: they are the expected tensor with {how}, laid out "
        f"again in row-major order; reshape() and view() only regroup elements in memory order, so use "
        f"transpose()/permute() to swap axes (and reshape() after that if needed)"
    )


def transposed(name: str, dims: tuple) -> str:
    how = f"dimensions {dims[0]} and {dims[1]} swapped" if len(dims) == 2 else f"its dimensions permuted as {dims}"
    return (
        f"{name} holds the expected tensor with {how} (a transpose of it, the same shape here): a transpose "
        f"too many, or one missing"
    )


def regrouped(name: str) -> str:
    return (
        f"{name} holds the right values in the wrong order: it is a transpose/permute of what was expected; "
        f"to regroup elements in their row-major order (rows of a new shape) use reshape() or view(), "
        f"which never move elements"
    )


def graph_kept(name: str, grad_fn: str) -> str:
    return (
        f"{name} holds loss tensors that still carry their autograd graph (grad_fn={grad_fn}), not numbers: "
        f"every one keeps its step's whole graph alive, so memory grows with each step; store loss.item() instead"
    )


def graph_kept_total(name: str, grad_fn: str) -> str:
    return (
        f"{name} is a tensor with a graph (grad_fn={grad_fn}) where a Python number is expected: adding loss "
        f"tensors chains every step's graph onto one that never gets freed; add loss.item() instead"
    )


def moved_leaf(name: str, grad_fn: str) -> str:
    return (
        f"{name} is not a leaf (grad_fn={grad_fn}): it was created with requires_grad=True and then moved or "
        f"converted, and the copy gets no .grad (an optimizer would update the original); create it on the "
        f"device with the right dtype directly (torch.randn(..., device=DEVICE, requires_grad=True))"
    )


def uncleared(name: str, backward_calls: int) -> str:
    return (
        f"the reference clears {name}.grad between steps (its {name}.grad ends as None); yours is never cleared, "
        f"so each of your {backward_calls} backward() calls adds its gradient to the previous ones: set "
        f"{name}.grad = None (or call zero_grad()) after each update"
    )


def graph_cut(name: str) -> str:
    return (
        f"{name} is cut off from the graph (it has no grad_fn) where the reference's is not: "
        f"one of .detach(), .item(), .data, .numpy(), torch.tensor(...) or a torch.no_grad() block made a value "
        f"autograd cannot follow, so no gradient flows back through it"
    )


def leaf_lost(leaf: str) -> str:
    return (
        f"{leaf} no longer requires grad where the reference's does: your code replaced it with a new tensor "
        f"({leaf} = {leaf} - ... under torch.no_grad() makes one, and so do .detach() and .data) or switched its "
        f"requires_grad off, so nothing computed from it afterwards has a graph; update it in place "
        f"({leaf} -= ...) inside torch.no_grad()"
    )


def still_attached(name: str, grad_fn: str) -> str:
    return (
        f"{name} is still part of the graph (grad_fn={grad_fn}) where the reference's is detached: take it with "
        f".detach() (and .clone() if it must not change with the original)"
    )


def shares_numpy(name: str, array: str) -> str:
    return (
        f"{name} and the NumPy array {array} share memory (torch.from_numpy, torch.as_tensor and .numpy() make "
        f"no copy on the CPU), so a change to one shows in the other; the reference's do not share: make a copy "
        f"(torch.tensor(array) for a tensor, t.numpy().copy() for an array)"
    )


def live_state(name: str, model: str) -> str:
    return (
        f"{name} holds {model}'s live tensors: state_dict() returns references to the parameters, not copies, "
        f"so it changes as training goes on; keep a snapshot with copy.deepcopy({model}.state_dict()) "
        f"(or {{k: v.clone() for k, v in ...items()}})"
    )


def copies_numpy(name: str, array: str) -> str:
    return (
        f"{name} is a copy, but it should share memory with the NumPy array {array}: torch.from_numpy({array}) "
        f"(or torch.as_tensor) wraps the same memory, while torch.tensor() always copies"
    )


# Errors whose message names a classic bug: (text in the exception message, explanation).
ERRORS = (
    (
        "modified by an inplace operation",
        "an in-place operation (x += ..., x *= ..., x[...] = ..., .add_(), relu(inplace=True)) changed a tensor "
        "that autograd saved for backward(); compute a new tensor instead (x = x * 2)",
    ),
    (
        "does not require grad and does not have a grad_fn",
        "the value backward() started from is cut off from the graph: .detach(), .item(), .data, .numpy(), "
        "torch.tensor(...) or torch.no_grad() broke the chain back to the tensors that require grad",
    ),
    (
        "backward through the graph a second time",
        "backward() ran twice through the same graph, whose saved tensors the first call freed: build the "
        "graph again each step (recompute the loss), and never add loss tensors across steps (use loss.item())",
    ),
    (
        "a leaf Variable that requires grad is being used in an in-place operation",
        "an in-place update of a leaf that requires grad must not be recorded: do it inside "
        "`with torch.no_grad():` (w -= lr * w.grad), or assign to w.data",
    ),
    (
        "grad can be implicitly created only for scalar outputs",
        "backward() without an argument needs a single number: reduce first (loss.sum() or loss.mean()) or "
        "pass the gradient of the output, y.backward(torch.ones_like(y))",
    ),
    (
        "Can't call numpy() on Tensor that requires grad",
        "a tensor that requires grad cannot become a NumPy array directly: use t.detach().cpu().numpy()",
    ),
    (
        "Expected all tensors to be on the same device",
        "tensors on different devices met in one operation: create every tensor with device=DEVICE (or "
        "device=x.device) and move the model with model.to(DEVICE)",
    ),
    (
        "view size is not compatible with input tensor's size and stride",
        "view() needs memory laid out in the new shape's order, and this tensor is not contiguous (a "
        "transpose, say): use reshape(), which copies when it must",
    ),
    (
        "is not on the expected device",
        "a tensor was created on another device than the inputs: create it with device=x.device (or "
        "torch.zeros_like(x) / x.new_tensor(...)) so the function works wherever its inputs live",
    ),
    (
        "Cannot copy out of meta tensor",
        "your function copies a tensor to the CPU or reads its values (.cpu(), .item(), .tolist(), .numpy(), or "
        "a tensor made without device=): keep every tensor on the input's device (device=x.device) so it works "
        "on any device",
    ),
    (
        "cannot assign module before Module.__init__() call",
        "call super().__init__() first in your module's __init__: nn.Module sets up the registries that "
        "layers, parameters and buffers are recorded in",
    ),
    (
        "cannot assign buffer before Module.__init__() call",
        "call super().__init__() first in your module's __init__: nn.Module sets up the registries that "
        "layers, parameters and buffers are recorded in",
    ),
    (
        "cannot assign parameters before Module.__init__() call",
        "call super().__init__() first in your module's __init__: nn.Module sets up the registries that "
        "layers, parameters and buffers are recorded in",
    ),
    *(
        (
            needle,
            "tensors of different dtypes met in one operation (float32 and float64, say): give them one dtype (a "
            "tensor you create can follow the input's: dtype=x.dtype, or x.new_tensor(...))",
        )
        for needle in (
            "expected scalar type Float but found Double",
            "expected scalar type Double but found Float",
            "expected m1 and m2 to have the same dtype",
            "expected both vectors to have same dtype",
            "expected mat1 and mat2 to have the same dtype",
        )
    ),
    (
        "expected scalar type Long",
        "class indices for cross_entropy / nll_loss must be integers (torch.long): convert them with .long()",
    ),
    (
        "Missing key(s) in state_dict",
        "the state_dict's keys do not match the model's: a layer is named differently, or held in a plain "
        "list (unregistered)",
    ),
)


# What a refusal says where torch's message does not name the object (its first line only).
_PICKLED_OBJECT = (
    "torch.load(..., weights_only=True) refused the file: it holds a pickled object, not only tensors, numbers, "
    "strings and containers of them; store plain data in its place (a module's state_dict(), a function's result, "
    "called)"
)
VAGUE_ERRORS = frozenset({_PICKLED_OBJECT})  # said only where no reading of the same error names more
_UNSUPPORTED_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def _weights_only_refusal(text: str) -> str:
    """torch.load(weights_only=True) refused a file: what it holds, where torch's message names it."""
    found = _UNSUPPORTED_GLOBAL.search(text)
    if found is None:
        return _PICKLED_OBJECT
    name = found.group(1).rstrip(".")
    if ".nn.modules." in name:
        return (
            f"torch.load(..., weights_only=True) refused the file: it holds a pickled module ({name}), not only "
            "tensors; save model.state_dict() and load it into a fresh model with load_state_dict"
        )
    return (
        f"torch.load(..., weights_only=True) refused the file: it holds {name}, a Python object pickled by reference, "
        "where only tensors, numbers, strings and containers of them load; store plain data in its place (for a "
        "function, what calling it returns; for a module, its state_dict()), not the object itself"
    )


_TOO_MANY_ARGUMENTS = re.compile(r"forward\(\) takes (\d+) positional arguments? but (\d+) were given")


def pre_hook_arguments(text: str, code: str) -> str | None:
    """forward() given more positional arguments than it takes, where the learner's code
    registers a forward pre-hook: what the hook returns replaces the arguments."""
    found = _TOO_MANY_ARGUMENTS.search(text or "")
    if found is None or "register_forward_pre_hook" not in (code or ""):
        return None
    takes, given = int(found.group(1)) - 1, int(found.group(2)) - 1  # self is counted in both
    return (
        f"forward() was given {given} positional arguments where it takes {takes}, and your code registers a "
        "forward pre-hook: consistent with a pre-hook that returns more items than forward takes (its return "
        "value, a tuple, replaces the module's positional arguments; None keeps them), or a call of the model "
        "with more arguments than forward takes"
    )


def for_error(text: str) -> str | None:
    if "weights only load failed" in (text or "").lower():
        return _weights_only_refusal(text)
    for needle, explanation in ERRORS:
        if needle.lower() in (text or "").lower():
            return explanation
    return None
