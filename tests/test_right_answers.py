"""Right answers written otherwise than the reference, which a check once failed: each must
pass, graded in real kernels against the built-in pack. A check that reads more than the
skill it names (looking at a weight counted as computing with it, say) fails them."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from class_grading import grade_cases

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Right:
    name: str
    exercise: str  # LESSON/EXERCISE of the built-in pack
    code: str


def _code(text: str) -> str:
    return textwrap.dedent(text).lstrip()


CASES = (
    # Asking autocast for the device of the model's own weight (where x lives too): reading
    # the weight's .device outside the region is no use of the weight outside autocast.
    Right(
        "autocast-device-of-the-weights",
        "devices-precision/cpu-autocast",
        _code(
            """
            import torch
            import torch.nn.functional as F


            def autocast_forward(model, x, y):
                with torch.autocast(device_type=next(model.parameters()).device.type, dtype=torch.bfloat16):
                    logits = model(x)
                    loss = F.cross_entropy(logits, y)
                return logits, loss


            logits, loss = autocast_forward(model, x, y)
            loss.backward()
            """
        ),
    ),
    # The reference with an assert on the weights' dtype first.
    Right(
        "autocast-asserts-float32-weights",
        "devices-precision/cpu-autocast",
        _code(
            """
            import torch
            import torch.nn.functional as F


            def autocast_forward(model, x, y):
                assert all(p.dtype == torch.float32 for p in model.parameters())
                with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
                    logits = model(x)
                    loss = F.cross_entropy(logits, y)
                return logits, loss


            logits, loss = autocast_forward(model, x, y)
            loss.backward()
            """
        ),
    ),
    # assert_close imported by name and given the two lists joined: the comparison is read
    # from the call itself, however the function was bound
    Right(
        "assert-close-by-name-on-joined-grads",
        "compile/match-eager",
        _code(
            """
            import torch
            from torch.testing import assert_close


            def both_grads(model, x):
                model.eval()
                compiled = torch.compile(model, backend="aot_eager")
                model.zero_grad()
                model(x).square().mean().backward()
                eager = [p.grad for p in model.parameters()]
                model.zero_grad()
                compiled(x).square().mean().backward()
                graphed = [p.grad for p in model.parameters()]
                assert_close(torch.cat([g.flatten() for g in graphed]), torch.cat([g.flatten() for g in eager]))
                return eager, graphed


            eager, graphed = both_grads(model, x)
            """
        ),
    ),
    Right(
        "island-device-of-the-encoder",
        "mixed-precision/float32-island",
        _code(
            """
            import torch


            def embed_and_compare(encoder, x):
                dev = next(encoder.parameters()).device.type
                with torch.autocast(device_type=dev, dtype=torch.bfloat16):
                    emb = encoder(x)
                    with torch.autocast(device_type=dev, enabled=False):
                        e = emb.float()
                        sim = e @ e.T
                return emb, sim


            emb, sim = embed_and_compare(encoder, x)
            """
        ),
    ),
    # A tensor made on the default device and moved to x's: where the default device is
    # meta, nothing can be copied out of it, which once read as a tensor left behind.
    Right(
        "mask-steps-moved-to-the-device-of-x",
        "devices-precision/masked-mean",
        _code(
            """
            import torch


            def masked_mean(x, lengths):
                steps = torch.arange(x.shape[1]).to(x.device)
                keep = (steps[None, :] < lengths[:, None]).to(x.dtype)
                return (x * keep.unsqueeze(-1)).sum(1) / lengths.to(x.dtype).unsqueeze(-1)
            """
        ),
    ),
)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict:
    return grade_cases(REPO / "lessons", CASES, tmp_path_factory.mktemp("right"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_right_answer_written_otherwise_passes(case: Right, verdicts: dict):
    verdict = verdicts[case.name]
    assert verdict["grade"] == "pass", verdict
