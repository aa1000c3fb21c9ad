"""``pack test``'s mutants of one exercise: derive them, run each like a wrong solution, judge.

A mutant the checks fail is killed; one that passes every check is a survivor, a weak
check reported at the reference's FILE:LINE with its diff, unless the exercise declares
it under ``equivalent_mutants``. Kills are cached (mutantcache.py); a kernel is taken
only when something is left to prove.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.grading import mutants as mut
from tutor.grading.mutantcache import MutantCache, key
from tutor.packs import models as m
from tutor.packs.problems import Pos

if TYPE_CHECKING:
    from tutor.engine.pool import KernelPool
    from tutor.engine.session import KernelSession
    from tutor.grading.verdict import Verdict

MODES = ("off", "summary", "all")


@dataclass
class MutantResult:
    id: str
    operator: str
    where: str  # FILE:LINE of the changed line in the reference solution
    outcome: str  # "killed", "survived" or "equivalent"
    diff: str
    detail: str = ""  # killed: the first problem the checks found; equivalent: the declared reason
    cached: bool = False  # killed in an earlier run (nothing it depends on changed since)
    seconds: float = 0.0


@dataclass
class ExerciseMutants:
    results: list[MutantResult] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # declarations that match no mutant
    problem: str | None = None  # why the literal values could not be had (the run goes on without them)

    def count(self, outcome: str) -> int:
        return sum(r.outcome == outcome for r in self.results)

    @property
    def ok(self) -> bool:
        return not self.stale and self.count("survived") == 0

    def summary(self) -> str:
        n = len(self.results)
        cached = sum(r.cached for r in self.results)
        text = (
            f"{n} mutant{'s' if n != 1 else ''}: {self.count('killed')} killed"
            + (f" ({cached} proven before)" if cached else "")
            + f", {self.count('survived')} survived, {self.count('equivalent')} declared equivalent"
        )
        if self.stale:
            text += "; " + "; ".join(self.stale)
        return text


def display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _checked_text(ex: m.Exercise) -> str:
    return json.dumps([c.model_dump() for c in ex.checks]) + json.dumps([k.model_dump() for k in ex.mistakes])


def _imports_torch(*sources: str) -> bool:
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any((a.asname or a.name) == "torch" for a in node.names):
                return True
    return False


VALUES_CELL = """\
def _ptfund_values(blob):
    import builtins, json
    import torch
    from ptfund_checks.namespaces import BoundedOutput, captured, new_namespace, run_code, seed_all
    req = json.loads(blob)
    ns = new_namespace(torch.device(req["device"]))
    with captured(BoundedOutput(limit=0)):
        seed_all(req["seed"])
        failed = run_code(req["setup"], ns, "<setup>", "setup") or run_code(req["solution"], ns, "<solution>", "solution")
    if failed:
        return json.dumps({"error": failed.phrase()})
    def data(v, depth=0):
        if (isinstance(v, torch.Tensor) and v.layout == torch.strided and v.device.type != "meta"
                and not v.is_complex() and v.numel() <= req["limit"]):
            return {"kind": "tensor", "dtype": str(v.dtype), "values": v.detach().cpu().tolist(),
                    "requires_grad": v.requires_grad}
        if type(v) in (bool, int, float):
            return {"kind": "number", "value": v}
        kinds = {list: "list", tuple: "tuple", torch.Size: "size"}
        if type(v) in kinds and depth < 4 and len(v) <= req["limit"]:
            items = [data(x, depth + 1) for x in v]
            if all(i is not None for i in items):
                return {"kind": "sequence", "type": kinds[type(v)], "items": items}
        return None
    out = {}
    for name in req["names"]:
        found = data(ns.get(name))
        if found is not None:
            out[name] = found
    return json.dumps(out)
_ptfund_values(%r)
"""


async def _reference_values(kernel: KernelSession, ex: m.Exercise, names: list[str]) -> tuple[dict, str | None]:
    """The reference's final values of ``names``, as data (JSON through the cell's result)."""
    device = kernel.device_info.kind if kernel.device_info else "cpu"
    blob = json.dumps(
        {
            "setup": ex.setup,
            "solution": ex.solution,
            "seed": ex.seed,
            "device": device,
            "names": names,
            "limit": mut.MAX_LITERAL_ELEMENTS,
        }
    )
    run = await kernel.execute(VALUES_CELL % blob, timeout=ex.time_limit + 10)
    if not run.ok or run.result_text is None:
        return {}, run.message or (f"{run.error.ename}: {run.error.evalue}" if run.error else "no values came back")
    try:
        data = json.loads(ast.literal_eval(run.result_text))
    except (ValueError, SyntaxError, TypeError):
        return {}, "the values came back unreadable"
    if not isinstance(data, dict) or "error" in data:
        return {}, str(data.get("error") if isinstance(data, dict) else "the values came back unreadable")
    return data, None


CHUNK = 4  # mutants per kernel: small batches spread an exercise's mutants over the workers


@dataclass(frozen=True)
class Batch:
    """Some of an exercise's mutants, run in one fresh kernel: given ones, or (``literal``)
    the literal and typed-in operators', which need the reference's values first."""

    mutants: tuple[mut.Mutant, ...] = ()
    literal: bool = False


def batches(ex: m.Exercise) -> list[Batch]:
    """The exercise's mutants in batches of ``CHUNK``, the literal ones in a batch of their
    own; at least one batch (an empty one takes no kernel), so every exercise is reported."""
    found = mut.mutants(ex.solution)
    out = [Batch(tuple(found[i : i + CHUNK])) for i in range(0, len(found), CHUNK)]
    if _value_targets(ex):
        out.append(Batch(literal=True))
    return out or [Batch()]


def _content(ex: m.Exercise) -> dict:
    return ex.model_dump(exclude={"equivalent_mutants", "title", "hints"})  # what can change a verdict


async def run_batch(pool: KernelPool, ex: m.Exercise, origin: Pos, cache: MutantCache, batch: Batch) -> ExerciseMutants:
    """Run a batch like wrong solutions (fresh namespaces each) in one fresh kernel, taken
    from ``pool`` only if something is left to prove."""
    from tutor.grading.verify import Verifier

    out = ExerciseMutants()
    content = _content(ex)
    kernel: KernelSession | None = None

    async def take() -> KernelSession:
        nonlocal kernel
        if kernel is None:
            kernel = await pool.take()
        return kernel

    try:
        found = list(batch.mutants)
        if batch.literal:
            found, out.problem = await _literal_mutants(take, ex, content, cache)
        for mutant in found:
            started = time.perf_counter()
            where = f"{display(origin.file)}:{origin.line + mutant.line - 1}"
            result = MutantResult(mutant.id, mutant.operator, where, "killed", mutant.diff)
            declared = next((d for d in ex.equivalent_mutants if mutant.matches(d.mutant)), None)
            kill_key = key(content, "kill", mutant.source)
            if declared is not None:
                result.outcome, result.detail = "equivalent", declared.reason
            elif cache.killed(kill_key):
                result.cached, result.detail = True, "killed in an earlier run"
            else:
                verdict = await Verifier(attached=await take()).verify(ex, mutant.source)
                if verdict.passed:
                    result.outcome = "survived"
                else:
                    result.detail = first_problem(verdict)
                    if verdict.status != "authoring-error":
                        # A broken exercise (its setup failed) proves nothing about its checks:
                        # the reference fails too, and such a "kill" must not be remembered.
                        cache.add_kill(kill_key)
            result.seconds = time.perf_counter() - started
            out.results.append(result)
    finally:
        if kernel is not None:
            pool.give_back(kernel)
    return out


async def _literal_mutants(
    take: Callable[[], Awaitable[KernelSession]], ex: m.Exercise, content: dict, cache: MutantCache
) -> tuple[list[mut.Mutant], str | None]:
    names = _value_targets(ex)
    # The cell and the names are part of the key: values cached for another cell or other names are not these.
    values_key = key(content, "values", VALUES_CELL, *names)
    values, problem = cache.values.get(values_key), None
    if values is None:
        values, problem = await _reference_values(await take(), ex, names)
        if problem is None:
            cache.add_values(values_key, values)
    torch_name = "torch" if _imports_torch(ex.setup, ex.solution) else "__import__('torch')"
    sources = {}
    for name, value in values.items():
        text = (
            mut.literal_source(value, torch_name=torch_name, on_device=ex.follows_device)
            if isinstance(value, dict)
            else None
        )
        if text is not None:
            sources[name] = text
    checked = _checked_text(ex)
    literals = {n: sources[n] for n in mut.literal_targets(ex.solution, ex.setup, checked) if n in sources}
    typed = {n: sources[n] for n in mut.typed_in_targets(ex.solution, ex.setup, checked) if n in sources}
    found = mut.mutants(ex.solution, literals, typed)
    return [x for x in found if x.operator in ("literal", "typed-in")], problem


def _value_targets(ex: m.Exercise) -> list[str]:
    """The names whose reference values the literal and typed-in operators need."""
    checked = _checked_text(ex)
    names = mut.literal_targets(ex.solution, ex.setup, checked)
    return names + [n for n in mut.typed_in_targets(ex.solution, ex.setup, checked) if n not in names]


def combine(ex: m.Exercise, parts: list[ExerciseMutants]) -> ExerciseMutants:
    """One exercise's batches together, with the declarations that matched no mutant."""
    out = ExerciseMutants([r for part in parts for r in part.results])
    out.problem = next((part.problem for part in parts if part.problem), None)
    for claim in ex.equivalent_mutants:
        if not any(mut.declares(claim.mutant, r.id, r.diff) for r in out.results):
            out.stale.append(f"equivalent_mutants: {claim.mutant!r} matches no mutant (remove it)")
    return out


def first_problem(verdict: Verdict) -> str:
    """The sentence that best says why a verdict is not a pass."""
    for msg in verdict.mistakes:
        return msg
    for c in verdict.checks:
        if not c.passed:
            return c.message
    return verdict.headline
