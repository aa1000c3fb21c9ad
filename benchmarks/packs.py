"""Load + validate the built-in pack and a generated 500-lesson pack (SPEC section 5).

Targets: built-in pack <= 100 ms; 500 lessons <= 1 s. Run: python benchmarks/packs.py
"""

from __future__ import annotations

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


def main() -> None:
    pack, problems = check_pack(REPO / "lessons")
    assert pack is not None and not problems, problems
    builtin = timed(lambda: check_pack(REPO / "lessons"), 15)
    n_lessons = len(pack.lessons)
    with tempfile.TemporaryDirectory() as tmp:
        big = big_pack(Path(tmp) / "big", 500)
        p, probs = check_pack(big)
        assert p is not None and len(p.lessons) == 500 and not probs, probs[:3]
        big_t = timed(lambda: check_pack(big), 3)
        small = big_pack(Path(tmp) / "small", 500, new_pack(Path(tmp) / "scaffold"))
        small_t = timed(lambda: check_pack(small), 3)
        size = sum(f.stat().st_size for f in big.rglob("*") if f.is_file()) / 500 / 1024
        small_size = sum(f.stat().st_size for f in small.rglob("*") if f.is_file()) / 500 / 1024
    rows = [
        (f"load + validate built-in pack ({n_lessons} lessons)", builtin, 0.100),
        (f"500 lessons like the built-in ones ({size:.0f} KiB each)", big_t, 1.0),
        (f"500 lessons like `pack new` makes ({small_size:.1f} KiB each)", small_t, 1.0),
    ]
    print(f"{'measure':<58} {'median':>9} {'target':>8}  verdict")
    for name, t, target in rows:
        print(f"{name:<58} {t * 1000:7.1f}ms {target * 1000:6.0f}ms  {'meets' if t <= target else 'MISSES'}")


if __name__ == "__main__":
    main()
