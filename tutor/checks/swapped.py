"""Two values in each other's place: the learner's ``a`` is what the reference's ``b`` is
and the learner's ``b`` what the reference's ``a`` is (a return or unpacking order
swapped, two assignments crossed), for names (``swapped``) and for the items a function
returns (``crossed_items``). Said only when the values show it both ways, and only
for names whose own values differ from the reference's: nothing else is claimed."""

from __future__ import annotations

import math

import torch

MAX_NAMES = 40
MAX_NUMEL = 1_000_000


def _comparable(value) -> bool:
    if isinstance(value, torch.Tensor):
        return type(value) in (torch.Tensor, torch.nn.Parameter) and not value.is_meta and value.numel() <= MAX_NUMEL
    return type(value) in (int, float)


def _close(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.device != b.device or a.dtype != b.dtype:
            return False
        x, y = a.detach(), b.detach()
        if x.is_floating_point() or x.is_complex():
            return bool(torch.allclose(x, y, rtol=1e-4, atol=1e-6, equal_nan=True))
        return bool(torch.equal(x, y))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-8)


def crossed_items(out, ref) -> tuple[int, int] | None:
    """(i, j) when ``out`` and ``ref`` (sequences of one length) differ at exactly items i
    and j, and each of those is what the other should be (a return order swapped)."""
    try:
        if not all(_comparable(v) for v in (*out, *ref)):
            return None
        differing = [k for k, (o, r) in enumerate(zip(out, ref, strict=True)) if not _close(o, r)]
        if len(differing) != 2:
            return None
        i, j = differing
        return (i, j) if _close(out[i], ref[j]) and _close(out[j], ref[i]) else None
    except (RuntimeError, TypeError, ValueError):
        return None


def swapped(learner: dict, ref: dict) -> list:
    """Sentences, one per pair of names found in each other's place."""
    names = [
        n
        for n, v in list(ref.items())[: MAX_NAMES * 4]
        if not n.startswith("_") and n in learner and _comparable(v) and _comparable(learner[n])
    ][:MAX_NAMES]
    wrong = []
    for name in names:
        try:
            if not _close(learner[name], ref[name]):
                wrong.append(name)
        except (RuntimeError, TypeError, ValueError):
            continue
    out: list = []
    used: set = set()
    for i, a in enumerate(wrong):
        for b in wrong[i + 1 :]:
            if a in used or b in used:
                continue
            try:
                crossed = _close(learner[a], ref[b]) and _close(learner[b], ref[a])
            except (RuntimeError, TypeError, ValueError):
                continue
            if crossed:
                used.update((a, b))
                out.append(
                    f"{a} and {b} are in each other's place: your {a} is what {b} should be and your {b} is what "
                    f"{a} should be"
                )
    return out
