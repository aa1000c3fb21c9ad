"""How a failing condition quotes its operands (tutor/checks/explain.py): exactly as written."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from tutor.checks.explain import _segment

STATEMENTS = st.lists(
    st.sampled_from(
        [
            "x = (a +\n  b) == c",
            "assert f('é', 2) < g(x)",
            "y = [1,\r\n 2,\r 3]",
            "if a:\n    assert 'ü' in s and t",
            "",
            "z = {'k': (2,\n3)}  # 😀",
        ]
    ),
    min_size=1,
    max_size=6,
)


@given(STATEMENTS, st.sampled_from(["\n", "\r\n", "\r"]))
def test_operands_are_cut_as_the_standard_library_cuts_them(parts, newline):
    """The source is split once for all of a condition's operands; each piece is still
    exactly what ast.get_source_segment gives, whatever the line endings and characters."""
    source = newline.join(parts)
    for node in ast.walk(ast.parse(source)):
        if hasattr(node, "lineno"):
            assert _segment(source, node) == ast.get_source_segment(source, node)
