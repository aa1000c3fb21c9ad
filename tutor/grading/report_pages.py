"""The class report (classreport.py) as Markdown and as one self-contained HTML page.

Names, messages and pack text come from outside: every one goes through tutor/escape.py.
The page has its CSS inline and its charts as inline SVG drawn here, and loads nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from tutor.escape import for_html, for_markdown
from tutor.grading.report_svg import bar_chart

MAX_NAMES = 12  # learners listed per mistake in the Markdown table (the JSON has all)


def _percent(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _who(names: list[str], escape: Callable[[object], str]) -> str:
    shown = ", ".join(escape(n) for n in names[:MAX_NAMES])
    return shown + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


def _minutes(value: float) -> str:
    return f"{value:.0f} min" if value >= 1 else f"{value * 60:.0f} s"


def _effort_sentence(effort: dict) -> str:
    return (
        f"{effort['learners']} learners: median {effort['attempts_median']:g} attempts "
        f"(at most {effort['attempts_max']}), median {_minutes(effort['minutes_median'])} "
        f"from first to last attempt (at most {_minutes(effort['minutes_max'])})."
    )


# ---------------------------------------------------------------- Markdown


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_page(report: dict) -> str:
    md = for_markdown
    out = [
        "# Class report",
        "",
        f"{report['learners']} learners, {len(report['exercises'])} exercises (ptfund-tutor {md(report['tutor'])}).",
        "",
        "## Pass rate per exercise",
        "",
        _row("exercise", "passed", "submitted", "pass rate", *report["exercises"][0]["grades"])
        if report["exercises"]
        else "",
    ]
    if report["exercises"]:
        out.append(_row(*["---"] * (4 + len(report["exercises"][0]["grades"]))))
    for ex in report["exercises"]:
        out.append(
            _row(md(ex["exercise"]), ex["passed"], ex["submitted"], _percent(ex["pass_rate"]), *ex["grades"].values())
        )
    out += ["", "## Mistakes, most common first", ""]
    if report["mistakes"]:
        out.append(_row("rank", "learners", "exercise", "kind", "id", "mistake", "who"))
        out.append(_row(*["---"] * 7))
        for rank, m in enumerate(report["mistakes"], 1):
            out.append(
                _row(
                    rank,
                    m["count"],
                    md(m["exercise"]),
                    m["kind"],
                    md(m["id"]),
                    md(m["message"]),
                    _who(m["learners"], md),
                )
            )
    else:
        out.append("No verdict names a mistake.")
    for ex in report["exercises"]:
        out += ["", f"## {md(ex['exercise'])}: {md(ex['title'])}", "", "### Checks", ""]
        if ex["checks"]:
            out.append(_row("check", "passed", "ran", "pass rate"))
            out.append(_row("---", "---", "---", "---"))
            for c in ex["checks"]:
                out.append(_row(md(c["check"]), c["passed"], c["ran"], _percent(c["pass_rate"])))
        else:
            out.append("No check ran.")
        effort = ex["effort"]
        if effort:
            out += [
                "",
                "### Time and attempts (progress exports)",
                "",
                _effort_sentence(effort),
            ]
    out += ["", "## Learners", "", _row("learner", "passed", "of"), _row("---", "---", "---")]
    out += [_row(md(r["learner"]), r["passed"], r["total"]) for r in report["class"]]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- HTML

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.n { text-align: right; }
.kind-automatic { color: #7a4b00; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
"""


def _table(head: list[str], rows: list[list[object]], numeric: frozenset[int] | set[int] = frozenset()) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def html_page(report: dict) -> str:
    h = for_html
    exercises, mistakes = report["exercises"], report["mistakes"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Nothing outside the page, ever: no script, no fetch, no font.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>Class report</title><style>{STYLE}</style></head><body>",
        "<h1>Class report</h1>",
        f"<p>{report['learners']} learners, {len(exercises)} exercises (ptfund-tutor {h(report['tutor'])}).</p>",
        "<h2>Pass rate per exercise</h2>",
        bar_chart([(ex["exercise"], ex["pass_rate"] or 0.0, _percent(ex["pass_rate"])) for ex in exercises]),
    ]
    if exercises:
        grades = list(exercises[0]["grades"])
        parts.append(
            _table(
                ["exercise", "passed", "submitted", "pass rate", *grades],
                [
                    [
                        h(ex["exercise"]),
                        ex["passed"],
                        ex["submitted"],
                        _percent(ex["pass_rate"]),
                        *ex["grades"].values(),
                    ]
                    for ex in exercises
                ],
                numeric=set(range(1, 4 + len(grades))),
            )
        )
    parts.append("<h2>Mistakes, most common first</h2>")
    if mistakes:
        most = max(m["count"] for m in mistakes)
        bars = [(f"{rank}. {m['message']}", m["count"] / most, str(m["count"])) for rank, m in enumerate(mistakes, 1)]
        parts.append(bar_chart(bars))
        parts.append(
            _table(
                ["rank", "learners", "exercise", "kind", "id", "mistake", "who"],
                [
                    [
                        rank,
                        m["count"],
                        h(m["exercise"]),
                        f'<span class="kind-{m["kind"]}">{m["kind"]}</span>',
                        h(m["id"]),
                        h(m["message"]),
                        ", ".join(h(n) for n in m["learners"]),
                    ]
                    for rank, m in enumerate(mistakes, 1)
                ],
                numeric={0, 1},
            )
        )
    else:
        parts.append("<p>No verdict names a mistake.</p>")
    for ex in exercises:
        parts.append(f"<h2>{h(ex['exercise'])}: {h(ex['title'])}</h2><h3>Checks</h3>")
        if ex["checks"]:
            parts.append(
                bar_chart([(c["check"], c["pass_rate"] or 0.0, _percent(c["pass_rate"])) for c in ex["checks"]])
            )
            parts.append(
                _table(
                    ["check", "passed", "ran", "pass rate"],
                    [[h(c["check"]), c["passed"], c["ran"], _percent(c["pass_rate"])] for c in ex["checks"]],
                    numeric={1, 2, 3},
                )
            )
        else:
            parts.append("<p>No check ran.</p>")
        effort = ex["effort"]
        if effort:
            parts.append(f"<h3>Time and attempts (progress exports)</h3><p>{_effort_sentence(effort)}</p>")
            parts.append(
                _table(
                    ["learner", "attempts", "first to last attempt"],
                    [[h(e["learner"]), e["attempts"], _minutes(e["minutes"])] for e in effort["by_learner"]],
                    numeric={1, 2},
                )
            )
    parts.append("<h2>Learners</h2>")
    parts.append(
        _table(
            ["learner", "passed", "of"],
            [[h(r["learner"]), r["passed"], r["total"]] for r in report["class"]],
            numeric={1, 2},
        )
    )
    parts.append("</body></html>")
    return "\n".join(str(p) for p in parts) + "\n"
