"""What crosses between the judge and the learner's kernel in a judged verification: as few
round trips as the checks need, with the same verdicts. Real kernels, real torch."""

from __future__ import annotations

import asyncio
import json

import pytest
from judge_exercises import BUMP

from tutor.grading import judging
from tutor.grading.verify import verify_in_fresh_kernel
from tutor.packs import models as m
from tutor.packs.catalog import Catalog

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _relayed(monkeypatch):
    """These tests count what the host relays: every request as a prompt, the path of a
    gateway's or an attached kernel (local kernels talk over the pipe: test_judge_pipe.py)."""
    monkeypatch.setenv(judging.NO_PIPE_ENV, "1")


def _requests(monkeypatch) -> list[str]:
    """The op of every request the judge sends the host, in order."""
    ops: list[str] = []
    relay = judging._Relay.__call__

    async def recording(self, prompt: str) -> str:
        header = prompt.removeprefix(judging.PROMPT).partition("\n")[0]
        try:
            ops.append(str(json.loads(header).get("op")))
        except ValueError:
            ops.append("?")
        return await relay(self, prompt)

    monkeypatch.setattr(judging._Relay, "__call__", recording)
    return ops


def test_the_names_after_a_call_come_with_its_answer(monkeypatch):
    """modules/mlp's checks call the learner's module and read its names after each call:
    they come with the call's answer, so the judge never asks for them on their own."""
    ops = _requests(monkeypatch)
    exercise = Catalog.load().find_exercise("modules/mlp").exercise
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, exercise.solution))
    assert verdict.status == "pass", verdict.lines()
    assert "call" in ops
    assert "names" not in ops, ops


def test_names_a_forward_leaves_as_they_were_cross_once(monkeypatch):
    """modules/mlp's model (about 0.6 MB of weights) crosses with each world's begin and never
    again: the names read after each forward are the same as sent (also right after the device
    run, which first records where the numbers came from), so they cross as "same"."""
    sizes: list[int] = []
    prompt_of_learner = judging._Relay.learner_prompt

    async def recording(self, prompt: str):
        sizes.append(len(prompt))
        return await prompt_of_learner(self, prompt)

    monkeypatch.setattr(judging._Relay, "learner_prompt", recording)
    exercise = Catalog.load().find_exercise("modules/mlp").exercise
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, exercise.solution))
    assert verdict.status == "pass", verdict.lines()
    assert len([n for n in sizes if n > 100_000]) == 2, sizes  # the main world's begin and the second's


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (BUMP.solution, "pass"),
        ("n = 0\n\ndef bump():\n    pass\n", "fail"),  # the call changes nothing
        ("n = 0\n\ndef bump():\n    global n\n    n += 2\n", "fail"),  # it changes n wrongly
    ],
)
def test_names_that_came_with_a_call_are_those_after_it(monkeypatch, code, status):
    ops = _requests(monkeypatch)
    verdict = asyncio.run(verify_in_fresh_kernel(BUMP, code))
    said = " ".join(text for _, text in verdict.lines())
    assert verdict.status == status, said
    if status == "fail":
        assert "bump() left n at" in said
    assert "names" not in ops, ops


def _learner_prompts(monkeypatch) -> list[str]:
    """Every prompt of the learner's kernel (its answers), in order."""
    prompts: list[str] = []
    relay = judging._Relay.learner_prompt

    async def recording(self, prompt: str) -> str | None:
        prompts.append(prompt)
        return await relay(self, prompt)

    monkeypatch.setattr(judging._Relay, "learner_prompt", recording)
    return prompts


# A device run (DEVICE in the setup) and two further worlds (variants), all run ahead.
AHEAD = m.Exercise(
    id="ahead",
    title="ahead",
    prompt="Bind t to a transposed.",
    setup="import torch\na = torch.arange(6.0, device=DEVICE).reshape(2, 3)\n",
    solution="t = a.t()\n",
    checks=[{"kind": "tensor", "expr": "t", "compare": ["shape", "dtype", "values"]}],
    variants=["a = torch.arange(12.0, device=DEVICE).reshape(3, 4)\n", "a = a * 2\n"],
)


@pytest.mark.parametrize(("code", "status"), [(AHEAD.solution, "pass"), ("t = a\n", "fail")])
def test_begins_run_ahead_cost_no_round_trip_of_their_own(monkeypatch, code, status):
    """The further worlds are asked for with the device run's answer, and the last answer of
    each batch run ahead is the learner's kernel waiting for the next request: no empty
    prompt, no request that only starts runs."""
    ops, prompts = _requests(monkeypatch), _learner_prompts(monkeypatch)
    verdict = asyncio.run(verify_in_fresh_kernel(AHEAD, code))
    assert verdict.status == status, verdict.lines()
    answers = [prompt.partition("\n") for prompt in prompts]
    assert all(body for _, _, body in answers), [head for head, _, body in answers if not body]
    if status == "pass":
        # begin; the device run started; its answer with the further worlds started; each further world.
        assert ops == ["begin", "ahead", "ahead-answer", "ahead-answer", "ahead-answer"], ops
        assert len(prompts) == 4  # the main world's begin, the device run's, each further world's
    else:  # failing code: nothing runs ahead but the cheap device run
        assert ops == ["begin", "ahead"], ops


def _headers(monkeypatch) -> list[dict]:
    """Every header the judge sends the host, in order."""
    headers: list[dict] = []
    relay = judging._Relay.__call__

    async def recording(self, prompt: str) -> str:
        headers.append(json.loads(prompt.removeprefix(judging.PROMPT).partition("\n")[0]))
        return await relay(self, prompt)

    monkeypatch.setattr(judging._Relay, "__call__", recording)
    return headers


@pytest.mark.parametrize("which", ["solution", "wrong"])
def test_a_function_checks_calls_run_ahead_of_the_reference(monkeypatch, which):
    """tensors/follow-the-input: the cases go to the learner's kernel before the judge runs
    the reference on them (no "calls" request waits on the reference), both devices' 12 in
    one request per world, and the verdict is the same as ever: the reference passes, the
    CPU-column bug fails on meta (in the main world: no further world runs)."""
    headers = _headers(monkeypatch)
    exercise = Catalog.load().find_exercise("tensors/follow-the-input").exercise
    code = exercise.solution if which == "solution" else exercise.wrong_solutions[0].code
    verdict = asyncio.run(verify_in_fresh_kernel(exercise, code))
    posted = [h for h in headers if h.get("op") == "ahead" and h.get("calls")]
    worlds = 1 + len(exercise.worlds()) if which == "solution" else 1
    assert len(posted) == worlds and not any(h.get("op") == "calls" for h in headers), headers
    if which == "solution":
        assert verdict.status == "pass", verdict.lines()
        assert any("24 generated cases (cpu and meta)" in text for _, text in verdict.lines()), verdict.lines()
    else:
        assert verdict.status == "fail" and exercise.wrong_solutions[0].expect in verdict.feedback(), verdict.feedback()
