"""Built-in signatures found by comparing the learner's variables with the reference's of
the same name (after a check failed): loss tensors kept instead of numbers, a leaf moved
off its device, a graph cut or kept, NumPy memory shared or copied, plain lists of layers."""

import types

import numpy as np
import torch

from . import causes, signatures, wire
from .compare import shares_storage
from .registration import unregistered

_SKIP = (types.ModuleType, types.FunctionType, type)
MAX_NAMES = 200  # a namespace this large is not a lesson's: look at the first ones only


def _grad_fn(t) -> str:
    return (wire.grad_fn_name(t) or "") if isinstance(t, torch.Tensor) else ""


def _arrays(ns: dict) -> dict:
    return {k: v for k, v in ns.items() if isinstance(v, np.ndarray) and not k.startswith("_")}


def _shared_array(t: torch.Tensor, arrays: dict) -> str | None:
    if t.device.type != "cpu":
        return None
    for name, arr in arrays.items():
        try:
            if shares_storage(t, torch.from_numpy(arr)) or np.shares_memory(t.detach().numpy(), arr):
                return name
        except Exception:
            continue
    return None


def _lost_leaf(learner: dict, ref: dict) -> str | None:
    """A leaf that requires grad in the reference's namespace and not in the learner's."""
    for i, (name, theirs) in enumerate(ref.items()):
        if i > MAX_NAMES:
            break
        mine = learner.get(name)
        if (
            not name.startswith("_")
            and isinstance(theirs, torch.Tensor)
            and isinstance(mine, torch.Tensor)
            and wire.is_leaf(theirs)
            and wire.requires_grad(theirs)
            and not wire.requires_grad(mine)
        ):
            return name
    return None


def _tensor_findings(
    name: str, mine: torch.Tensor, theirs: torch.Tensor, my_arrays, their_arrays, lost: str | None = None
) -> list:
    out = []
    if (
        wire.requires_grad(theirs)
        and wire.is_leaf(theirs)
        and not wire.is_leaf(mine)
        and _grad_fn(mine) in ("ToCopyBackward0",)
    ):
        out.append(signatures.moved_leaf(name, _grad_fn(mine)))
    elif _grad_fn(theirs) and not _grad_fn(mine):
        # Cut where a leaf lost its requires_grad: that is the cause, not an op on this value.
        out.append(signatures.leaf_lost(lost) if lost else signatures.graph_cut(name))
    elif not wire.requires_grad(theirs) and _grad_fn(mine):
        out.append(signatures.still_attached(name, _grad_fn(mine)))
    normalised = _normalised(name, mine, theirs)
    if normalised:
        out.append(normalised)
    if my_arrays or their_arrays:
        a, b = _shared_array(mine, my_arrays), _shared_array(theirs, their_arrays)
        # Sharing memory or not is a cause only where it changed values (one side was written
        # afterwards): the tensor's, or the array's it shares with. Where both agree with the
        # reference's, no check can be failing for it.
        array = a or b
        changed = _written_apart(mine, theirs) or (
            array is not None and _array_differs(my_arrays.get(array), their_arrays.get(array))
        )
        if a and not b and changed:
            out.append(signatures.shares_numpy(name, a))
        elif b and not a and changed:
            out.append(signatures.copies_numpy(name, b))
    return out


def _normalised(name: str, mine: torch.Tensor, theirs: torch.Tensor) -> str | None:
    """A name the code computed as (log-)probabilities over another dim than the reference's
    same name: an intermediate (log_probs) the failing check only sees through its result."""
    if mine.shape != theirs.shape or not (mine.is_floating_point() and theirs.is_floating_point()):
        return None
    if mine.is_meta or theirs.is_meta or mine.numel() > causes.MAX_ELEMENTS or not _values_differ(mine, theirs):
        return None
    return causes.normalised(name, mine.detach().cpu().double().numpy(), theirs.detach().cpu().double().numpy())


def _values_differ(mine: torch.Tensor, theirs: torch.Tensor) -> bool:
    try:
        if mine.shape != theirs.shape or mine.dtype != theirs.dtype or mine.is_meta or theirs.is_meta:
            return True
        return not torch.equal(mine.detach().cpu(), theirs.detach().cpu())
    except RuntimeError:
        return True


def _written_apart(mine: torch.Tensor, theirs: torch.Tensor) -> bool:
    """Whether the values differ by more than a cast: a copy made at another dtype
    (``torch.from_numpy(b).float()``) holds the array's values rounded, which is no write."""
    try:
        if (
            mine.shape == theirs.shape
            and mine.dtype != theirs.dtype
            and mine.is_floating_point()
            and theirs.is_floating_point()
            and not (mine.is_meta or theirs.is_meta)
        ):
            return not torch.equal(mine.detach().cpu(), theirs.detach().cpu().to(mine.dtype))
    except RuntimeError:
        return True
    return _values_differ(mine, theirs)


def _array_differs(mine, theirs) -> bool:
    if mine is None or theirs is None:
        return True
    try:
        return mine.shape != theirs.shape or mine.dtype != theirs.dtype or not np.array_equal(mine, theirs)
    except (TypeError, ValueError):
        return True


def _is_float_list(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, float) for x in v)


def _uncleared(name: str, mine, theirs, backward_calls: int) -> str | None:
    if backward_calls < 2 or not (isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)):
        return None
    if (
        wire.is_leaf(theirs)
        and wire.requires_grad(theirs)
        and wire.grad_of(theirs) is None
        and wire.is_leaf(mine)
        and wire.grad_of(mine) is not None
    ):
        return signatures.uncleared(name, backward_calls)
    return None


def _live_owner(state: dict, modules: dict) -> str | None:
    """The module whose parameters or buffers ``state`` holds by reference (not copies)."""
    tensors = [v for v in state.values() if isinstance(v, torch.Tensor)]
    if not tensors:
        return None
    for name, module in modules.items():
        if name.startswith("_"):
            continue
        live = list(module.parameters()) + list(module.buffers())
        if any(shares_storage(t, p) for t in tensors[:50] for p in live[:50]):
            return name
    return None


def compare_namespaces(learner: dict, ref: dict, backward_calls: int = 0, stopped: bool = False) -> list:
    """``backward_calls``: how often the learner's code called backward() (from the trace).
    ``stopped``: the learner's code raised, so what its later lines would have undone (a
    hook's remove()) never ran: nothing is read from what was left over."""
    out = []
    my_arrays, their_arrays = _arrays(learner), _arrays(ref)
    lost = _lost_leaf(learner, ref)
    for i, (name, theirs) in enumerate(ref.items()):
        if i > MAX_NAMES:
            break
        if name.startswith("_") or name not in learner or isinstance(theirs, _SKIP):
            continue
        mine = learner[name]
        try:
            uncleared = _uncleared(name, mine, theirs, backward_calls)
            if uncleared:
                out.append(uncleared)
            if isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor):
                out.extend(_tensor_findings(name, mine, theirs, my_arrays, their_arrays, lost))
            elif _is_float_list(theirs) and isinstance(mine, list):
                kept = next((x for x in mine if isinstance(x, torch.Tensor) and _grad_fn(x)), None)
                if kept is not None:
                    out.append(signatures.graph_kept(name, _grad_fn(kept)))
            elif isinstance(theirs, float) and isinstance(mine, torch.Tensor) and _grad_fn(mine):
                out.append(signatures.graph_kept_total(name, _grad_fn(mine)))
        except Exception:  # a learner's odd object must never break the verdict
            continue
    modules = {k: v for k, v in list(learner.items())[:MAX_NAMES] if isinstance(v, torch.nn.Module)}
    for name, value in list(learner.items())[:MAX_NAMES]:
        if isinstance(value, dict) and name in ref and isinstance(ref[name], dict) and not name.startswith("_"):
            model = _live_owner(value, modules)
            if model and not _live_owner(ref[name], {k: v for k, v in ref.items() if isinstance(v, torch.nn.Module)}):
                out.append(signatures.live_state(name, model))
        if isinstance(value, torch.nn.Module) and not name.startswith("_"):
            try:
                out.extend(u.message for u in unregistered(value, name) if u.kind == "modules")
                if isinstance(ref.get(name), torch.nn.Module):
                    out.extend(
                        signatures.never_registered(name, *absent) for absent in _absent_buffers(value, ref[name])
                    )
                    mine, theirs = _hooks(value), _hooks(ref[name])
                    if mine > theirs and not stopped:
                        out.append(signatures.hooks_left(name, mine, theirs))
            except Exception:
                continue
    return out


def _hooks(module: torch.nn.Module) -> int:
    """The module's own forward, forward-pre and backward hooks (a learner's module as data
    holds placeholders that count the learner's)."""
    return len(module._forward_hooks) + len(module._forward_pre_hooks) + len(module._backward_hooks)


def _absent_buffers(mine: torch.nn.Module, theirs: torch.nn.Module) -> list:
    """(path, class of its owner) for the reference module's buffers of which the learner's has no attribute at all (neither a
    buffer, a parameter nor a plain attribute): never registered, not registered wrongly."""
    absent = []
    for path, _ in list(theirs.named_buffers())[:MAX_NAMES]:
        owner_path, _, leaf = path.rpartition(".")
        try:
            owner = mine.get_submodule(owner_path) if owner_path else mine
        except AttributeError:
            continue  # the submodule itself is missing: the module check says so
        their_owner = theirs.get_submodule(owner_path) if owner_path else theirs
        # Only of the reference's own class: where another class stands in its place (a bare
        # nn.Module bound to the name), no __init__ of that class is the one to fix.
        if type(owner).__name__ == type(their_owner).__name__ and _has(owner, leaf) is False:
            absent.append((path, type(owner).__name__))
    return absent


def _has(owner: torch.nn.Module, leaf: str) -> bool | None:
    """Whether the module has an attribute ``leaf``; None when that cannot be told."""
    if any(leaf in d for d in (owner._parameters, owner._buffers, owner._modules, vars(owner))):
        return True
    try:
        getattr(owner, leaf)  # a learner's module as data asks the learner's kernel
    except AttributeError:
        return False
    except Exception as exc:  # the learner's kernel answered that it raised
        return False if "AttributeError" in (getattr(exc, "names", None) or ()) else None
    return True
