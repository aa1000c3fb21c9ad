"""Output flood, side by side with the idle app in one run (the targets in docs/architecture.md).

    python benchmarks/flood.py [--floods N] [--idle SECONDS] [--json]

The real app, headless (``run_test``, 120x40), on the built-in pack with its real kernels
(the live one and the warm spare, both started and idle before anything is measured):
the first lesson's exercise is opened and ``for i in range(1_000_000): print(i)`` is put in
the editor and run with ctrl+r, N times. Measured in the UI process:

- key latency: every 50 ms a thread presses right / left (the cursor moves in the editor;
  nothing else changes) the way the terminal driver's input thread does
  (``driver.send_message``), and times each key until it is handled (the editor's
  selection changed) and until painted (the end of the first screen update that starts
  after it was handled; the update is rendered to the terminal's escape codes as a real
  terminal would get it, which the headless driver otherwise skips);
- event-loop lag: a task sleeps 10 ms again and again and records how late it wakes;
- UI process memory: RSS (/proc/self/status) before the floods, its peak while each runs
  (sampled every 20 ms) and after each (gc'd); the lines the output pane holds at the end;
  and whether torch was ever imported or mapped into the UI process (it must not be).

Baseline, in the same run: the same keys and lag sampler with the app idle, in windows
before, between and after the floods. A run's first 0.5 s (the pane resets, the Output tab
comes forward, the first burst lands) is also shown apart from the rest of the flood.

Targets: keys <= 100 ms during the flood; UI memory bounded: peak RSS <= 150 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from startup import RSS_TARGET_MB, _rss_mb, _torch_mapped  # noqa: E402

from tutor.app.widgets.output_log import MAX_LINES as MAX_PANE_LINES  # noqa: E402

FLOOD_CODE = "for i in range(1_000_000):\n    print(i)\n"
KEY_INTERVAL = 0.050
LAG_SLEEP = 0.010
SETTLE = 0.5  # a run's first moments (the pane resets, the tab switches, a first burst): shown apart
RSS_INTERVAL = 0.020
KEY_TARGET_MS = 100.0
SIZE = (120, 40)


def rss_mb() -> float:
    return _rss_mb(os.getpid())


# ---------------------------------------------------------------- probes


class KeyProbe:
    """Presses right/left in the editor from a thread, every ``KEY_INTERVAL`` seconds.

    Keys are handled in order and each moves the cursor once, so the n-th selection change
    belongs to the n-th key pressed. A key counts as painted at the end of the first screen
    update that started after it was handled.
    """

    def __init__(self, app, editor):
        self.app = app
        self.editor = editor
        self._lock = threading.Lock()
        self._pending: deque[float] = deque()  # press times of keys not yet handled
        self._unpainted: list[tuple[float, float]] = []  # (pressed, handled)
        self.handled: list[float] = []  # seconds, press -> handled
        self.painted: list[float] = []  # seconds, press -> painted
        self.painted_at: list[float] = []  # when each of those keys was pressed
        self.pressed = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._right = True
        app.watch(editor, "selection", self._on_selection, init=False)
        self._original_display = app._display
        app._display = self._display

    def _on_selection(self, old, new) -> None:
        now = time.perf_counter()
        with self._lock:
            if not self._pending:
                return  # not one of ours (no other cursor moves happen while measuring)
            pressed = self._pending.popleft()
        self.handled.append(now - pressed)
        self._unpainted.append((pressed, now))

    def _display(self, screen, renderable) -> None:
        start = time.perf_counter()
        self._original_display(screen, renderable)
        if renderable is not None and hasattr(renderable, "render_segments"):
            renderable.render_segments(self.app.console)  # what a terminal would be sent
        if not self._unpainted:
            return
        end = time.perf_counter()
        keep = []
        for pressed, handled in self._unpainted:
            if handled <= start:
                self.painted.append(end - pressed)
                self.painted_at.append(pressed)
            else:
                keep.append((pressed, handled))
        self._unpainted = keep

    def start(self) -> None:
        self.handled, self.painted, self.painted_at, self.pressed = [], [], [], 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._press_loop, name="key-probe", daemon=True)
        self._thread.start()

    def _press_loop(self) -> None:
        from textual import events

        driver = self.app._driver
        next_at = time.perf_counter()
        while not self._stop.is_set():
            key = "right" if self._right else "left"
            self._right = not self._right
            event = events.Key(key, None)
            event.set_sender(self.app)
            with self._lock:
                self._pending.append(time.perf_counter())
            self.pressed += 1
            driver.send_message(event)
            next_at += KEY_INTERVAL
            self._stop.wait(max(0.0, next_at - time.perf_counter()))

    async def stop(self, drain: float = 10.0) -> int:
        """Stop pressing; wait for the keys in flight; returns how many were never handled."""
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        deadline = time.monotonic() + drain
        # The painter thread fills these; polling keeps it free of any asyncio object.
        while (self._pending or self._unpainted) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        with self._lock:
            lost = len(self._pending)
            self._pending.clear()
        self._unpainted = []
        return lost


class LagProbe:
    """How late a 10 ms sleep on the app's event loop wakes."""

    def __init__(self):
        self.samples: list[float] = []
        self.at: list[float] = []  # when each sleep began
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self.samples, self.at = [], []
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(LAG_SLEEP)
            self.samples.append(max(0.0, time.perf_counter() - t0 - LAG_SLEEP))
            self.at.append(t0)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass


class RssProbe:
    """The UI process's RSS, sampled from a thread; the peak since ``start``."""

    def __init__(self):
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.peak = rss_mb()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="rss-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(RSS_INTERVAL):
            self.peak = max(self.peak, rss_mb())

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, rss_mb())
        return self.peak


class GcProbe:
    """The garbage collector's pauses (>= 1 ms) in the UI process while active."""

    def __init__(self):
        self.pauses: list[tuple[int, float]] = []  # (generation, seconds)
        self.active = False
        self._t0 = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self.active:
            took = time.perf_counter() - self._t0
            if took >= 0.001:
                self.pauses.append((info["generation"], took))


def summary(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0, "median_ms": None, "p99_ms": None, "max_ms": None}
    ms = sorted(s * 1000 for s in seconds)
    p99 = ms[min(len(ms) - 1, max(0, round(0.99 * len(ms)) - 1))]
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "p99_ms": round(p99, 1),
        "max_ms": round(ms[-1], 1),
    }


# ---------------------------------------------------------------- the run


async def wait_until(condition, timeout: float, what: str, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except Exception:  # widgets not mounted yet
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(step)


class Phases:
    """Samples of each kind of phase ("idle", "flood"), pooled over its windows."""

    def __init__(self, keys: KeyProbe, lag: LagProbe, gcp: GcProbe):
        self.keys, self.lag, self.gc = keys, lag, gcp
        self.raw: dict[str, dict] = {}

    async def measure(self, kind: str, body):
        keys, lag = self.keys, self.lag
        self.gc.pauses, self.gc.active = [], True
        keys.start()
        lag.start()
        t0 = time.perf_counter()
        out = await body()
        elapsed = time.perf_counter() - t0
        lost = await keys.stop()
        await lag.stop()
        self.gc.active = False
        raw = self.raw.setdefault(
            kind,
            {"seconds": 0.0, "windows": 0, "pressed": 0, "lost": 0, "handled": [], "painted": [], "lag": [], "gc": []},
        )
        raw["seconds"] += elapsed
        raw["windows"] += 1
        raw["pressed"] += keys.pressed
        raw["lost"] += lost
        raw["handled"] += keys.handled
        raw["painted"] += keys.painted
        raw["lag"] += lag.samples
        if isinstance(out, dict) and "started_at" in out:  # a run: also without its first moments
            after = out.pop("started_at") + SETTLE
            raw.setdefault("painted_settled", []).extend(
                x for x, at in zip(keys.painted, keys.painted_at, strict=True) if at >= after
            )
            raw.setdefault("lag_settled", []).extend(
                x for x, at in zip(lag.samples, lag.at, strict=True) if at >= after
            )
        raw["gc"] += self.gc.pauses
        return out

    def report(self) -> dict:
        out = {}
        for kind, raw in self.raw.items():
            slow_gc = [t for _, t in raw["gc"] if t >= 0.010]
            out[kind] = {
                "windows": raw["windows"],
                "seconds": round(raw["seconds"], 1),
                "keys_pressed": raw["pressed"],
                "keys_lost": raw["lost"],
                "key_handled": summary(raw["handled"]),
                "key_painted": summary(raw["painted"]),
                "loop_lag": summary(raw["lag"]),
                **(
                    {
                        "key_painted_settled": summary(raw["painted_settled"]),
                        "loop_lag_settled": summary(raw["lag_settled"]),
                    }
                    if "painted_settled" in raw
                    else {}
                ),
                "gc_pauses_over_10ms": len(slow_gc),
                "gc_pause_max_ms": round(max(slow_gc) * 1000, 1) if slow_gc else None,
            }
        return out


async def bench(idle_seconds: float, floods: int, data_dir: str) -> dict:
    from textual import events

    from tutor.app.app import TutorApp, TutorOptions
    from tutor.app.screens.lesson import LessonScreen

    app = TutorApp(TutorOptions(data_dir=data_dir))
    result: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        await asyncio.wait_for(app.ready.wait(), 60)
        await wait_until(lambda: app.screen.query_one("#lessons").option_count >= 3, 60, "the lesson list")
        await pilot.press("enter")  # the first lesson
        await wait_until(lambda: isinstance(app.screen, LessonScreen), 30, "the lesson screen")
        screen = app.screen
        editor = screen.query_one("#editor")
        log = screen.query_one("#output")
        await wait_until(lambda: editor.text.strip() != "" and not editor.read_only, 30, "the starter code")
        result["exercise"] = screen.ref.qualified if screen.ref is not None else None
        await wait_until(lambda: app.kernel_status.state == "ready", 150, "the kernel", step=0.2)
        if app.kernels is not None and app.kernels._pool is not None:
            await asyncio.wait_for(app.kernels._pool.ready(), 150)  # the spare's torch import is done

        # A warm-up run: the exercise's setup runs now, and the output pane has drawn once.
        editor.load_text("print('warm')\n")
        await pilot.press("ctrl+r")
        await wait_until(lambda: "warm" in log.lines and not app.kernels.busy, 60, "the warm-up run")

        editor.load_text(FLOOD_CODE)
        editor.focus()
        editor.move_cursor((0, 0))
        await pilot.pause(1.0)  # the draft save (debounced) is done before measuring
        assert app.focused is editor, app.focused

        phases = Phases(KeyProbe(app, editor), LagProbe(), GcProbe())
        rss = RssProbe()
        gc.collect()
        result["rss_before_mb"] = round(rss_mb(), 1)

        async def idle() -> None:
            await asyncio.sleep(idle_seconds)

        async def flood() -> dict:
            rss.start()
            t0 = time.perf_counter()
            ctrl_r = events.Key("ctrl+r", None)
            ctrl_r.set_sender(app)
            app._driver.send_message(ctrl_r)  # as the terminal would deliver it
            await wait_until(lambda: app.kernels.busy, 30, "the flood to start", step=0.01)
            await wait_until(lambda: not app.kernels.busy, 170, "the flood to end", step=0.02)
            ran = time.perf_counter() - t0
            await wait_until(lambda: any("lines omitted" in line for line in log.lines), 10, "the omitted marker")
            return {"run_seconds": round(ran, 2), "rss_peak_mb": round(rss.stop(), 1), "started_at": t0}

        runs = []
        for _ in range(floods):  # idle, flood, idle, flood, ..., idle: both see the same machine
            await phases.measure("idle", idle)
            run = await phases.measure("flood", flood)
            lines = list(log.lines)
            run["output_lines"] = len(lines)
            run["output_marker"] = next((line for line in lines if "lines omitted" in line), None)
            run["output_has_999999"] = "999999" in lines
            gc.collect()
            run["rss_after_mb"] = round(rss_mb(), 1)
            runs.append(run)
        await phases.measure("idle", idle)
        gc.collect()
        result["rss_after_mb"] = round(rss_mb(), 1)
        result["floods"] = runs
        result["rss_peak_mb"] = max(r["rss_peak_mb"] for r in runs)
        result["output_lines"] = max(r["output_lines"] for r in runs)
        result.update(phases.report())
        result["torch_in_sys_modules"] = "torch" in sys.modules
        result["torch_mapped"] = _torch_mapped(os.getpid())
        await app.action_quit()
    return result


# ---------------------------------------------------------------- report


def verdicts(r: dict) -> dict:
    flood = r["flood"]
    painted = flood["key_painted"]
    return {
        "keys_max_within_100ms": painted["n"] > 0 and painted["max_ms"] <= KEY_TARGET_MS and flood["keys_lost"] == 0,
        "keys_p99_within_100ms": painted["n"] > 0 and painted["p99_ms"] <= KEY_TARGET_MS,
        "memory_bounded": r["rss_peak_mb"] <= RSS_TARGET_MB and r["output_lines"] <= MAX_PANE_LINES,
        "no_torch_in_ui": not (r["torch_in_sys_modules"] or r["torch_mapped"]),
    }


def joined(runs: list[dict], key: str) -> str:
    return ", ".join(f"{x[key]:.1f}" for x in runs)


def print_table(r: dict, v: dict) -> None:
    idle, flood = r["idle"], r["flood"]
    runs = r["floods"]
    print(
        f"exercise {r['exercise']}; {len(runs)} floods of 1,000,000 lines, each run "
        f"{joined(runs, 'run_seconds')} s (ctrl+r to the run's end); "
        f"idle windows before, between and after; a key every {KEY_INTERVAL * 1000:.0f} ms"
    )
    print()
    head = f"{'median / p99 / max':<30}{'flood':>26}{'idle (baseline)':>26}"
    print(head)
    print("-" * len(head))

    def cell(s: dict) -> str:
        return f"{s['median_ms']:.1f} / {s['p99_ms']:.1f} / {s['max_ms']:.1f} ms" if s["n"] else "-"

    for label, key in (
        ("key -> handled", "key_handled"),
        ("key -> painted", "key_painted"),
        ("event-loop lag (10 ms sleep)", "loop_lag"),
    ):
        print(f"{label:<30}{cell(flood[key]):>26}{cell(idle[key]):>26}")
    print(f"{'  flood from 0.5 s into a run:':<30}")
    for label, key in (("  key -> painted", "key_painted_settled"), ("  event-loop lag", "loop_lag_settled")):
        print(f"{label:<30}{cell(flood[key]):>26}{'':>26}")
    for label, f in (
        ("keys pressed / never handled", lambda p: f"{p['keys_pressed']} / {p['keys_lost']}"),
        ("seconds measured", lambda p: f"{p['seconds']:.1f}"),
        (
            "GC pauses >= 10 ms (max)",
            lambda p: (
                f"{p['gc_pauses_over_10ms']}" + (f" ({p['gc_pause_max_ms']:.0f} ms)" if p["gc_pause_max_ms"] else "")
            ),
        ),
    ):
        print(f"{label:<30}{f(flood):>26}{f(idle):>26}")
    print()
    print(
        f"UI RSS: before {r['rss_before_mb']:.1f} MB; peak per flood "
        f"{joined(runs, 'rss_peak_mb')} MB; after each flood (gc'd) "
        f"{joined(runs, 'rss_after_mb')} MB; at the end {r['rss_after_mb']:.1f} MB"
    )
    last = runs[-1]
    print(
        f"output pane after each flood: {', '.join(str(x['output_lines']) for x in runs)} lines; "
        f"marker {last['output_marker']!r}; '999999' shown: {'yes' if last['output_has_999999'] else 'no'}"
    )
    print(
        f"torch in the UI process: sys.modules {'yes' if r['torch_in_sys_modules'] else 'no'}, "
        f"mapped {'yes' if r['torch_mapped'] else 'no'}"
    )
    print()
    yes = {True: "meets", False: "MISSES"}
    fp = flood["key_painted"]
    print(
        f"keys <= {KEY_TARGET_MS:.0f} ms during the flood, every key painted: {yes[v['keys_max_within_100ms']]} "
        f"(max {fp['max_ms']} ms); p99: {yes[v['keys_p99_within_100ms']]} ({fp['p99_ms']} ms)"
    )
    print(
        f"UI memory bounded (peak RSS <= {RSS_TARGET_MB} MB, pane <= {MAX_PANE_LINES} lines): "
        f"{yes[v['memory_bounded']]}"
    )
    print(f"no torch in the UI process: {yes[v['no_torch_in_ui']]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floods", type=int, default=3, help="flood runs, each between idle windows")
    parser.add_argument("--idle", type=float, default=6.0, help="seconds of each idle window")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    data = tempfile.mkdtemp(prefix="ptfund-flood-")
    t0 = time.perf_counter()
    try:
        result = asyncio.run(bench(args.idle, args.floods, data))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    result["total_seconds"] = round(time.perf_counter() - t0, 1)
    result["cpus"] = os.cpu_count()
    result["python"] = platform.python_version()
    result["load_average"] = [round(x, 1) for x in os.getloadavg()]
    result["date"] = datetime.now(timezone.utc).date().isoformat()
    v = verdicts(result)
    result["verdicts"] = v
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result, v)
        print(
            f"total {result['total_seconds']:.0f} s; {result['cpus']} CPUs; load average "
            f"{' / '.join(map(str, result['load_average']))}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
