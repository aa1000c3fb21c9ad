"""Deterministic inputs for function checks, described from ArgSpec dicts.

Case 0 puts every named dimension at its low end and case 1 at its high end (the edges
find most bugs); later cases draw sizes at random. Everything derives from (seed, case),
so the learner's and the reference's calls get identical, independent copies.
"""

import random
from dataclasses import dataclass

import torch

from .describe import dtype_name, fmt_number, fmt_shape, short_repr
from .vocabulary import INPUT_DTYPES

DTYPES = {name: getattr(torch, name) for name in INPUT_DTYPES}
INT_RANGE = (0, 10)  # default range of int arguments
FLOAT_RANGE = (-1.0, 1.0)  # default range of float arguments
TENSOR_INT_RANGE = (-10, 10)  # default values of integer tensors
SHAPE_NDIM = (1, 3)  # default number of dimensions of shape arguments
SHAPE_SIZES = (1, 4)  # default sizes of their dimensions


class SpecError(Exception):
    """The check's argument spec is unusable (an authoring error)."""


@dataclass
class Case:
    index: int
    args: list  # the generated values
    texts: list  # 'x of shape (1, 3) float32' / 'n = 4', one per argument
    size: int  # total tensor elements: smaller cases are reported first
    ndim: int

    def describe(self) -> str:
        return ", ".join(self.texts)


def _dims(dims: dict, rng: random.Random, index: int, distinct: bool = False) -> dict:
    out: dict = {}
    for k, (name, bounds) in enumerate(dims.items()):
        lo, hi = int(bounds[0]), int(bounds[1])
        if lo > hi:
            raise SpecError(f"dimension '{name}' has low {lo} above high {hi}")
        if index == 0:
            v = lo + k if distinct else lo  # the low edge, nudged apart so no two sizes are equal
        elif index == 1:
            v = hi - k if distinct else hi
        else:
            v = rng.randint(lo, hi)
            for _ in range(20 if distinct else 0):
                if v not in out.values():
                    break
                v = rng.randint(lo, hi)
        out[name] = min(max(v, lo), hi)
    return out


def _constrain(spec: dict, t, gen: torch.Generator | None):
    if spec.get("unique") and t.numel() > 1:
        if t.dtype.is_floating_point or t.dtype.is_complex:
            t = t + torch.arange(t.numel(), dtype=torch.float64).reshape(t.shape).to(t.dtype) * 1e-3
        else:
            lo = (
                int(spec["min"])
                if spec.get("min") is not None
                else (0 if t.dtype == torch.uint8 else TENSOR_INT_RANGE[0])
            )
            hi = int(spec["max"]) if spec.get("max") is not None else max(TENSOR_INT_RANGE[1], lo + t.numel() - 1)
            if hi - lo + 1 < t.numel():
                raise SpecError(f"unique: {t.numel()} values do not fit in [{lo}, {hi}]")
            t = (torch.randperm(hi - lo + 1, generator=gen)[: t.numel()] + lo).reshape(t.shape).to(t.dtype)
    if spec.get("sorted") and t.dim() > 0 and t.dtype != torch.bool:
        t = t.sort(dim=-1).values
    if spec.get("transform"):
        try:
            t = eval(spec["transform"], {"torch": torch, "x": t})  # the pack's own expression, like setup
        except Exception as exc:
            raise SpecError(f"transform {spec['transform']!r} failed: {type(exc).__name__}: {exc}") from None
    return t


def _shape(spec_shape, sizes: dict) -> tuple:
    shape = []
    for s in spec_shape:
        if isinstance(s, str):
            if s not in sizes:
                raise SpecError(f"dimension '{s}' is not in dims")
            shape.append(sizes[s])
        else:
            shape.append(int(s))
    return tuple(shape)


def _tensor(spec: dict, shape: tuple, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    lo, hi = spec.get("min"), spec.get("max")
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=gen).bool()
    elif dtype.is_complex:
        t = torch.randn(shape, generator=gen, dtype=torch.complex64)
    elif dtype.is_floating_point:
        base = torch.float64 if dtype == torch.float64 else torch.float32
        if lo is None and hi is None:
            t = torch.randn(shape, generator=gen, dtype=base)
        else:
            lo = float(lo) if lo is not None else float(hi) - 2.0  # type: ignore[arg-type]  # hi is set
            hi = float(hi) if hi is not None else lo + 2.0
            t = torch.rand(shape, generator=gen, dtype=base) * (hi - lo) + lo
        t = t.to(dtype)
    else:
        lo = int(lo) if lo is not None else (0 if dtype == torch.uint8 else TENSOR_INT_RANGE[0])
        hi = int(hi) if hi is not None else TENSOR_INT_RANGE[1]
        if dtype == torch.uint8:
            lo = max(lo, 0)
        t = torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(dtype)
    return t


def generate_case(args: list, dims: dict, seed: int, index: int, device, names: list, distinct: bool = False) -> Case:
    """The inputs of case ``index`` on ``device`` (fresh tensors on every call)."""
    rng = random.Random(seed * 1_000_003 + index)
    sizes = _dims(dims or {}, rng, index, distinct)
    values: list[object] = []
    texts, size, ndim = [], 0, 0
    for i, spec in enumerate(args):
        label = names[i] if i < len(names) else f"argument {i + 1}"
        kind = spec.get("type")
        if kind == "tensor":
            if spec.get("broadcasts_with"):
                shape = _broadcastable(_shape_of(spec["broadcasts_with"], names, values), rng, index)
            else:
                shape = _shape(spec.get("shape") or [], sizes)
            choices = spec.get("dtypes") or ["float32"]
            dtype_key = choices[0] if index == 0 else choices[rng.randrange(len(choices))]
            if dtype_key not in DTYPES:
                raise SpecError(f"unknown dtype '{dtype_key}'")
            dtype = DTYPES[dtype_key]
            gen = torch.Generator().manual_seed(rng.getrandbits(62))
            t = _constrain(spec, _tensor(spec, shape, dtype, gen), gen).to(device)
            if spec.get("requires_grad") and (dtype.is_floating_point or dtype.is_complex):
                t.requires_grad_(True)
            values.append(t)
            # As it is after any transform (a mask made bool from floats, another shape).
            texts.append(f"{label} of shape {fmt_shape(tuple(t.shape))} {dtype_name(t.dtype)}")
            size += t.numel()
            ndim += t.dim()
        elif kind == "int" and spec.get("dim"):
            if spec["dim"] not in sizes:
                raise SpecError(f"dimension '{spec['dim']}' is not in dims")
            v = sizes[spec["dim"]]
            if spec.get("transform"):
                v = _constrain({"transform": spec["transform"]}, v, None)
            values.append(v)
            texts.append(f"{label} = {v}")
        elif kind == "int":
            lo = int(spec["min"]) if spec.get("min") is not None else INT_RANGE[0]
            hi = int(spec["max"]) if spec.get("max") is not None else max(INT_RANGE[1], lo)
            v = lo if index == 0 else hi if index == 1 else rng.randint(lo, hi)
            values.append(v)
            texts.append(f"{label} = {v}")
        elif kind == "float":
            flo = float(spec["min"]) if spec.get("min") is not None else FLOAT_RANGE[0]
            fhi = float(spec["max"]) if spec.get("max") is not None else max(FLOAT_RANGE[1], flo)
            x = rng.uniform(flo, fhi)
            values.append(x)
            texts.append(f"{label} = {fmt_number(x)}")
        elif kind == "choice":
            options = list(spec.get("values") or [])
            if not options:
                raise SpecError("a choice argument needs values")
            v = options[0] if index == 0 else rng.choice(options)
            values.append(v)
            texts.append(f"{label} = {short_repr(v, 40)}")
        elif kind in ("shape", "index", "permutation", "dtype"):
            v = _structured(kind, spec, sizes, rng, index, names, values)
            values.append(v)
            texts.append(f"{label} = {'torch.' + dtype_name(v) if kind == 'dtype' else fmt_shape(v)}")
        else:
            raise SpecError(f"unknown argument type '{kind}'")
    return Case(index, values, texts, size, ndim)


def _edge(lo: int, hi: int, rng: random.Random, index: int) -> int:
    """Case 0 at the low end, case 1 at the high end, later cases at random."""
    return lo if index == 0 else hi if index == 1 else rng.randint(lo, hi)


def _structured(kind: str, spec: dict, sizes: dict, rng: random.Random, index: int, names: list, values: list):
    """A shape, an index within a shape, a permutation or a dtype (plain Python values)."""
    if kind == "dtype":
        choices = spec.get("dtypes") or ["float32"]
        key = choices[0] if index == 0 else choices[rng.randrange(len(choices))]
        if key not in DTYPES:
            raise SpecError(f"unknown dtype '{key}'")
        return DTYPES[key]
    if kind == "shape":
        if spec.get("broadcasts_with"):
            return _broadcastable(_shape_of(spec["broadcasts_with"], names, values), rng, index)
        lo_nd, hi_nd = spec.get("ndim") or SHAPE_NDIM
        lo = int(spec["min"]) if spec.get("min") is not None else SHAPE_SIZES[0]
        hi = int(spec["max"]) if spec.get("max") is not None else max(SHAPE_SIZES[1], lo)
        if lo < 0:
            raise SpecError("the sizes of a shape cannot be negative")
        nd = _edge(int(lo_nd), int(hi_nd), rng, index)
        return tuple(_edge(lo, hi, rng, index) for _ in range(nd))
    if kind == "index":
        within = _shape_of(spec["of"], names, values) if spec.get("of") else _shape(spec.get("shape") or [], sizes)
        if any(s < 1 for s in within):
            raise SpecError(
                f"no index lies within the shape {fmt_shape(within)}: give every dimension a size of 1 or more"
            )
        return tuple(_edge(0, s - 1, rng, index) for s in within)
    # a permutation of 0..k-1: the identity first, then the reversal, then shuffles
    if spec.get("of"):
        k = len(_shape_of(spec["of"], names, values))
    else:
        if spec.get("dim") not in sizes:
            raise SpecError(f"dimension '{spec.get('dim')}' is not in dims")
        k = sizes[spec["dim"]]
    order = list(range(k))
    if index == 1:
        order.reverse()
    elif index > 1:
        rng.shuffle(order)
    return tuple(order)


def _shape_of(name: str, names: list, values: list) -> tuple:
    """The shape of the earlier argument called ``name`` (a tensor, or a shape argument)."""
    for j, value in enumerate(values):
        if j < len(names) and names[j] == name:
            if isinstance(value, torch.Tensor):
                return tuple(value.shape)
            if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
                return value
            raise SpecError(f"argument '{name}' has no shape")
    raise SpecError(f"'{name}' is not an earlier argument")


def _broadcastable(base: tuple, rng: random.Random, index: int) -> tuple:
    """Another shape that broadcasts with ``base``: some sizes become 1 (or a 1 of base
    grows), leading dimensions dropped or added; never ``base`` itself."""
    out = list(base)
    for k, s in enumerate(out):
        roll = rng.random()
        if s > 1 and (roll < 0.4 or index == 0):
            out[k] = 1
        elif s == 1 and roll < 0.4:
            out[k] = rng.randint(2, 4)
    if index == 1 and out:
        out = out[1:]  # fewer dimensions: broadcasting aligns the trailing ones
    elif index > 1:
        roll = rng.random()
        if roll < 0.25 and out:
            out = out[rng.randint(1, len(out)) :]
        elif roll < 0.5:
            out = [rng.randint(1, 3), *out]
    if tuple(out) == tuple(base):
        out = [2, *out]
    return tuple(out)
