"""Exercises the judge's tests share (no tests here)."""

from tutor.packs import models as m

# A check calls the learner's bump(), which rebinds a name; the next check reads that name.
BUMP = m.Exercise(
    id="bump",
    title="bump",
    prompt="Define n = 0 and bump(), which adds one to n.",
    setup="",
    solution="n = 0\n\ndef bump():\n    global n\n    n += 1\n",
    checks=[
        {"kind": "python", "code": "bump()"},
        {"kind": "python", "code": "assert n == 1, f'bump() left n at {n}'"},
    ],
)
