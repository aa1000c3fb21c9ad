"""Load + validate the built-in pack and a generated 500-lesson pack (the targets in docs/architecture.md).

Targets: built-in pack <= 100 ms; 500 lessons <= 1 s. Run: python benchmarks/packs.py

"cold" parses everything (``cache=False``, as `pack validate --no-cache`); "warm" is the
next load of the unchanged pack, taking its lessons from the lesson cache (every start
of the app, `list`, `check` after the first). Both in one run, on the same files.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tutor.packs.loader import check_pack  # noqa: E402
from tutor.packs.scaffold import new_pack  # noqa: E402


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def big_pack(root: Path, lessons: int, src: Path = REPO / "lessons") -> Path:
    """The lessons of the pack in ``src``, repeated until there are ``lessons`` of them."""
    base = [d for d in sorted(src.iterdir()) if (d / "lesson.yaml").is_file()]
    root.mkdir()
    names = []
    for i in range(lessons):
        d = base[i % len(base)]
        name = f"{d.name}-{i}"
        shutil.copytree(d, root / name)
        y = root / name / "lesson.yaml"
        y.write_text(y.read_text().replace(f"id: {d.name}\n", f"id: {name}\n", 1))
        names.append(name)
    (root / "pack.yaml").write_text(
        "id: big\ntitle: Big\nversion: '1.0'\nlessons:\n" + "".join(f"  - {n}\n" for n in names)
    )
    return root


def cold_and_warm(root: Path, repeat: int) -> tuple[float, float]:
    pack, problems = check_pack(root, cache=False)
    assert pack is not None and not problems, problems[:3]
    cold = timed(lambda: check_pack(root, cache=False), repeat)
    check_pack(root)  # fills the cache
    warm = timed(lambda: check_pack(root), repeat)
    return cold, warm


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PTFUND_TUTOR_CACHE"] = str(Path(tmp) / "cache")  # never the user's cache
        n_lessons = len(check_pack(REPO / "lessons", cache=False)[0].lessons)
        builtin = cold_and_warm(REPO / "lessons", 15)
        big = big_pack(Path(tmp) / "big", 500)
        big_t = cold_and_warm(big, 3)
        small = big_pack(Path(tmp) / "small", 500, new_pack(Path(tmp) / "scaffold"))
        small_t = cold_and_warm(small, 3)
        size = sum(f.stat().st_size for f in big.rglob("*") if f.is_file()) / 500 / 1024
        small_size = sum(f.stat().st_size for f in small.rglob("*") if f.is_file()) / 500 / 1024
    rows = []
    for name, (cold, warm), target in [
        (f"built-in pack ({n_lessons} lessons)", builtin, 0.100),
        (f"500 lessons like the built-in ones ({size:.0f} KiB each)", big_t, 1.0),
        (f"500 lessons like `pack new` makes ({small_size:.1f} KiB each)", small_t, 1.0),
    ]:
        rows += [(f"{name}, cold", cold, target), (f"{name}, warm", warm, target)]
    print(f"{'measure':<64} {'median':>9} {'target':>8}  verdict")
    for name, t, target in rows:
        print(f"{name:<64} {t * 1000:7.1f}ms {target * 1000:6.0f}ms  {'meets' if t <= target else 'MISSES'}")


if __name__ == "__main__":
    main()
