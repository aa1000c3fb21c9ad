"""What in the learner's code led to an exception: the learner's own line where it was
raised, the shape, dtype and device of each tensor that line names (as they were at that
moment), and file-like buffers read at their end (an EOFError from ``torch.load`` after
``torch.save`` without ``seek(0)``).

``context`` runs where the exception happened (the learner's kernel, or this process) and
returns plain data: names, numbers and short strings. ``sentence`` turns that data into
one sentence wherever the verdict is decided; it trusts nothing in it but its types."""

import ast
import io
import linecache
import re
import warnings

import torch

from .describe import fmt_int, fmt_shape, join_names, shorten

MAX_NAMES = 8  # names of one line described
READ_ERRORS = ("EOFError", "UnpicklingError")
# Errors where what the tensors on the line are (shape, dtype, device, None) is the story;
# a NameError or an AttributeError says what it needs in its own message.
VALUE_ERRORS = ("RuntimeError", "ValueError", "TypeError", "IndexError")


def _frame(exc: BaseException, filename: str):
    """The deepest frame of ``filename`` in the traceback, and its line number."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = (tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _names(line: str) -> list:
    """Names and attribute chains on one line (``x``, ``model.fc.weight``), in order."""
    tree = None
    for text in (line, line + "\n    pass"):  # a statement, or the header of a block (for/with/if)
        try:
            tree = ast.parse(text)
            break
        except SyntaxError:
            continue
    if tree is None:  # one line of a longer statement
        return list(dict.fromkeys(re.findall(r"[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*", line)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            inner: ast.AST = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and not isinstance(node.ctx, ast.Store):
                out.append(".".join([inner.id, *reversed(parts)]))
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            out.append(node.id)  # not a name the line is still to bind: it holds nothing of this line yet
    order = {n: line.find(n.split(".")[0]) for n in out}
    return sorted(dict.fromkeys(out), key=lambda n: (order[n], n.count(".")))


def _lookup(frame, dotted: str):
    head, *rest = dotted.split(".")
    code = frame.f_code
    if head in frame.f_locals:
        value = frame.f_locals[head]
    elif frame.f_globals is not frame.f_locals and head in code.co_varnames + code.co_cellvars:
        raise LookupError(head)  # a function's local not bound yet: a global of that name is another value
    elif head in frame.f_globals:
        value = frame.f_globals[head]
    else:
        raise LookupError(head)
    for attr in rest:
        if isinstance(value, type(io)):
            raise LookupError(attr)  # a module's functions (torch.load): nothing to describe
        with warnings.catch_warnings():  # a non-leaf's .grad warns; reading it here is the learner's line's read
            warnings.simplefilter("ignore")
            value = getattr(value, attr)
    return value


def _at_end(value) -> list | None:
    """[position, size] of a readable in-memory or file buffer whose position is at its end."""
    try:
        if isinstance(value, io.BytesIO):
            with value.getbuffer() as view:
                size = view.nbytes
        elif isinstance(value, (io.BufferedReader, io.FileIO, io.BufferedRandom)):
            import os

            size = os.fstat(value.fileno()).st_size
        else:
            return None
        pos = value.tell()
    except Exception:
        return None
    return [int(pos), int(size)] if size > 0 and pos >= size else None


def _leaf_mark(frame, dotted: str) -> list:
    """["leaf"] when ``dotted`` is the .grad of a leaf that requires grad: one a backward() fills."""
    if not dotted.endswith(".grad"):
        return []
    try:
        owner = _lookup(frame, dotted.removesuffix(".grad"))
    except Exception:
        return []
    leaf = isinstance(owner, torch.Tensor) and owner.is_leaf and owner.requires_grad
    return ["leaf"] if leaf else []


def context(exc: BaseException, filename: str) -> dict | None:
    """Data about the learner's line where ``exc`` was raised; None outside their code."""
    try:
        found = _frame(exc, filename)
        if found is None:
            return None
        frame, lineno = found
        line = linecache.getline(filename, lineno).strip()
        tensors: list = []  # [name, shape, dtype, device]; [name, None, None, None] for None (+ "leaf": a leaf's .grad); [name, text] a module
        buffers: list = []
        for dotted in _names(line):
            if len(tensors) + len(buffers) >= MAX_NAMES:
                break
            try:
                value = _lookup(frame, dotted)
            except Exception:
                continue
            if isinstance(value, torch.Tensor):
                tensors.append(
                    [
                        dotted,
                        [int(s) for s in value.shape],
                        str(value.dtype).replace("torch.", ""),
                        str(value.device),
                        "grad" if value.requires_grad else "no grad",
                    ]
                )
            elif type(value) in (tuple, list) and value and dotted.isidentifier():
                # A hook's args, a batch: that it is a sequence, of what, is the story of a
                # TypeError ("can't multiply sequence by non-int").
                tensors.append([dotted, _sequence(value), "sequence"])
            elif value is None and "." in dotted:  # an attribute still None: x.grad before any backward()
                tensors.append([dotted, None, None, None, *_leaf_mark(frame, dotted)])
            elif isinstance(value, torch.nn.Module) and not list(value.children()):
                tensors.append([dotted, shorten(f"{type(value).__name__}({value.extra_repr()})", 80)])
            else:
                end = _at_end(value)
                if end is not None:
                    buffers.append([dotted, *end])
        return {"line": int(lineno), "source": shorten(line, 160), "tensors": tensors, "buffers": buffers}
    except Exception:  # the learner's objects can make anything fail: the error itself still shows
        return None


def _sequence(value) -> str:
    """'a tuple of 1 tensor of shape (4, 3)', 'a list of 3 items'."""
    kind = type(value).__name__
    items = list(value[: MAX_NAMES + 1])
    if items and all(isinstance(v, torch.Tensor) for v in items) and len(value) <= MAX_NAMES:
        shapes = join_names([fmt_shape([int(s) for s in v.shape]) for v in items], limit=MAX_NAMES)
        noun = "tensor" if len(value) == 1 else "tensors"
        return f"a {kind} of {fmt_int(len(value))} {noun} of shape {shapes}"
    types = sorted({type(v).__name__ for v in items})
    of = f" ({join_names(types, limit=3)})" if items else ""
    return f"a {kind} of {fmt_int(len(value))} {'item' if len(value) == 1 else 'items'}{of}"


def _text(x, limit: int = 60) -> str:
    return shorten(str(x), limit)


def _tensor(entry, ename: str, message: str) -> str | None:
    """One entry of the context said, as far as it bears on the error: whether a tensor
    requires grad for an error about gradients, a sequence for a TypeError."""
    try:
        if isinstance(entry, list) and len(entry) == 3 and entry[2] == "sequence":
            return f"{_text(entry[0])} is {_text(entry[1], 80)}" if ename == "TypeError" else None
        if isinstance(entry, list) and len(entry) == 2:
            return f"{_text(entry[0])} is {_text(entry[1], 80)}"
        name, shape, dtype, device = entry[:4]
        if shape is None:
            return f"{_text(name)} is None"
        said = f"{_text(name)} has shape {fmt_shape(shape)}, {_text(dtype, 20)} on {_text(device, 20)}"
        if entry[4:] == ["no grad"] and re.search(r"requires_grad|require (grad|gradient)", message):
            said += ", not requiring grad"
        return said
    except (TypeError, ValueError):
        return None


def _none_grad(ctx_data, ename: str, message: str) -> str | None:
    """The ``.grad`` of a leaf that requires grad, the one None on the line, for an
    AttributeError on None."""
    if ename != "AttributeError" or not message.startswith("'NoneType' object has no attribute"):
        return None
    entries = [e for e in ctx_data.get("tensors") or [] if isinstance(e, list) and len(e) >= 4 and e[1] is None]
    # the leaf's own .grad: a non-leaf's stays None even after backward(), so none is read for it
    grads = [e[0] for e in entries if isinstance(e[0], str) and e[0].endswith(".grad") and e[4:] == ["leaf"]]
    return _text(grads[0]) if len(entries) == 1 and grads else None


_RAISED_AT = re.compile(r"^line \d+ of [^,]+, `.*?`, raised \w+")


def raised_at(said: str) -> str | None:
    """The "line N of WHAT, `SOURCE`, raised ENAME" that begins a :func:`sentence`, else None."""
    found = _RAISED_AT.match(said)
    return found.group(0) if found else None


def sentence(ctx_data, ename: str, what: str = "your code", message: str = "") -> str | None:
    """'line 4 of your code, `y = x @ w`, raised RuntimeError; there x has shape (3, 4), ...'.
    ``ctx_data`` is what :func:`context` returned, as it arrived; ``message``: the exception's."""
    if not isinstance(ctx_data, dict) or not isinstance(ctx_data.get("line"), int):
        return None
    line, source = ctx_data["line"], _text(ctx_data.get("source") or "", 120)
    grad = _none_grad(ctx_data, ename, message)
    if grad:
        owner = grad.removesuffix(".grad")
        return (
            f"line {line} of {what}, `{source}`, raised {ename} because {grad} is None there: no backward() had "
            f"reached {owner} yet (or its .grad was set back to None since, as zero_grad() does)"
        )
    buffers = [b for b in ctx_data.get("buffers") or [] if isinstance(b, (list, tuple)) and len(b) == 3]
    if ename in READ_ERRORS and buffers:
        name, pos, size = buffers[0]
        name = _text(name)
        return (
            f"line {line} of {what}, `{source}`, raised {ename} because {name} is at its end (position "
            f"{fmt_int(pos)} of {fmt_int(size)} bytes): writing to it (torch.save, .write) or "
            f"reading it to the end leaves it there, so reading finds nothing; call {name}.seek(0) before reading it back"
        )
    tensors = [t for t in (_tensor(e, ename, message) for e in (ctx_data.get("tensors") or [])[:MAX_NAMES]) if t]
    if not tensors or ename not in VALUE_ERRORS:
        return None
    return f"line {line} of {what}, `{source}`, raised {ename}; at that point {join_names(tensors, limit=MAX_NAMES)}"
