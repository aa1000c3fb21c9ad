"""The code editor at growing code sizes, up to and past the bound (tutor/grading/code_size.py).

Each size in a fresh process: the app's CodeEditor (tree-sitter highlighting) in a
headless Textual app, the code loaded, then keys typed one by one. Reports the load time,
the median time per key (until the screen is updated) and the process's peak RSS. The
empty editor is the baseline, in the same run. Run: python benchmarks/editor_size.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LINE = "t = torch.zeros(2, 3, dtype=torch.float64)  # a typical line of a solution\n"
KEYS = 9

CHILD = """
import asyncio, json, resource, sys, time
from textual.app import App
from tutor.app.widgets.code_editor import CodeEditor
text = sys.stdin.read()

class Bench(App):
    def compose(self):
        yield CodeEditor("", id="e")

async def main():
    app = Bench()
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.query_one(CodeEditor)
        editor.focus()
        start = time.perf_counter()
        editor.load_text(text)
        await pilot.pause()
        load = time.perf_counter() - start
        keys = []
        for _ in range(%d):
            start = time.perf_counter()
            await pilot.press("a")
            await pilot.pause()
            keys.append(time.perf_counter() - start)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"load": load, "keys": keys, "rss": rss}))

asyncio.run(main())
""".replace("%d", str(KEYS))  # the template is Python code: braces of its own


def measure(size: int) -> dict:
    text = LINE * (size // len(LINE))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", CHILD], input=text, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main() -> None:
    from tutor.grading.code_size import MAX_CODE_BYTES

    sizes = [0, 4 * 1024, 16 * 1024, MAX_CODE_BYTES, 4 * MAX_CODE_BYTES]
    print(f"| code size | load | per key (median of {KEYS}) | peak RSS |")
    print("|---|---|---|---|")
    for size in sizes:
        r = measure(size)
        label = f"{size // 1024} KiB" + (" (the bound)" if size == MAX_CODE_BYTES else "")
        label += " (refused)" if size > MAX_CODE_BYTES else ""
        key = statistics.median(r["keys"])
        print(f"| {label} | {r['load'] * 1000:.0f} ms | {key * 1000:.0f} ms | {r['rss']:.0f} MB |", flush=True)


if __name__ == "__main__":
    main()
