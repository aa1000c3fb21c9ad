"""``progress [--json]``, ``progress export FILE``, ``progress import FILE``.

FILE may be ``-`` for stdout / stdin.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.errors import TutorError

if TYPE_CHECKING:
    from tutor.packs.catalog import Catalog
    from tutor.packs.models import Lesson
    from tutor.progress.store import ProgressStore


def _open_store(args: argparse.Namespace, readonly: bool = False) -> ProgressStore:
    from tutor.progress import ProgressStore

    store = ProgressStore.open(args.data_dir, readonly=readonly)
    if store.notice:
        print(f"ptfund-tutor: {store.notice}", file=sys.stderr)
    return store


# ---------------------------------------------------------------- show


def run_show(args: argparse.Namespace) -> int:
    from tutor.packs.catalog import Catalog
    from tutor.progress.status import language_setting

    catalog = Catalog.load(args.pack, language=language_setting(args.data_dir))
    for problem in catalog.problems:
        print(f"ptfund-tutor: {problem}", file=sys.stderr)
    with _open_store(args, readonly=True) as store:
        report = build_report(store, catalog, datetime.now(timezone.utc))
    if getattr(args, "json", False):
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 0


def build_report(store: ProgressStore, catalog: Catalog, now: datetime) -> dict:
    """Per-lesson completion for loaded packs, plus records of items no loaded pack has
    (a pack not given this time, or an item since removed)."""
    from tutor.progress.records import ts

    ex_stats = store.exercise_stats()
    cards = store.card_states()
    known: set[tuple[str, str]] = set()
    packs = []
    for pack in catalog.packs:
        lessons = [_lesson_report(pack.id, lesson, ex_stats, cards, now, known) for lesson in pack.lessons]
        packs.append({"id": pack.id, "title": pack.title, "lessons": lessons})
    other = _not_in_packs(ex_stats, cards, known)
    due_now = sum(1 for s in cards.values() if s.due <= now)
    upcoming = [s.due for s in cards.values() if s.due > now]
    position = store.position()
    settings = store.settings()
    return {
        "data_file": str(store.path),
        "packs": packs,
        "not_in_packs": other,
        "totals": {
            "attempts": sum(s.attempts for s in ex_stats.values()),
            "exercises_passed": sum(1 for s in ex_stats.values() if s.passed),
            "reviews": store.review_count(),
            "cards_seen": len(cards),
            "due_now": due_now,
            "next_due": ts(min(upcoming)) if upcoming else None,
        },
        "position": None
        if position is None
        else {
            "pack": position.pack,
            "lesson": position.lesson,
            "exercise": position.exercise,
            "updated_at": ts(position.updated_at),
        },
        "settings": {"desired_retention": settings.desired_retention, "new_cards_per_day": settings.new_cards_per_day},
    }


def _lesson_report(
    pack_id: str, lesson: Lesson, ex_stats: dict, cards: dict, now: datetime, known: set[tuple[str, str]]
) -> dict:
    """One lesson's completion; its items' keys are added to ``known``."""
    ex_keys = [(pack_id, f"{lesson.id}/{ex.id}") for ex in lesson.exercises]
    card_keys = [(pack_id, f"{lesson.id}/{c.id}") for c in lesson.cards]
    known.update(ex_keys, card_keys)
    seen = [cards[k] for k in card_keys if k in cards]
    return {
        "id": lesson.id,
        "title": lesson.title,
        "exercises": {
            "total": len(ex_keys),
            "passed": sum(1 for k in ex_keys if k in ex_stats and ex_stats[k].passed),
            "attempted": sum(1 for k in ex_keys if k in ex_stats),
            "attempts": sum(ex_stats[k].attempts for k in ex_keys if k in ex_stats),
        },
        "cards": {
            "total": len(card_keys),
            "seen": len(seen),
            "due": sum(1 for s in seen if s.due <= now),
            "reviews": sum(s.reps for s in seen),
            "leeches": sum(1 for s in seen if s.leech),
        },
    }


def _not_in_packs(ex_stats: dict, cards: dict, known: set[tuple[str, str]]) -> list[dict]:
    """Per pack, the records of items no loaded pack has."""
    other: dict[str, dict] = {}

    def of(pack_id: str) -> dict:
        return other.setdefault(
            pack_id, {"pack": pack_id, "exercises_attempted": 0, "exercises_passed": 0, "cards_seen": 0}
        )

    for (pack_id, item), st in ex_stats.items():
        if (pack_id, item) not in known:
            of(pack_id)["exercises_attempted"] += 1
            of(pack_id)["exercises_passed"] += int(st.passed)
    for pack_id, item in cards:
        if (pack_id, item) not in known:
            of(pack_id)["cards_seen"] += 1
    return sorted(other.values(), key=lambda o: o["pack"])


def format_report(r: dict) -> str:
    from tutor.progress.scheduling import when

    lines = [f"Progress ({r['data_file']})"]
    for pack in r["packs"]:
        lines.append("")
        lines.append(f"{pack['title']} [{pack['id']}]")
        for les in pack["lessons"]:
            ex, cd = les["exercises"], les["cards"]
            parts = []
            if ex["total"]:
                parts.append(f"exercises {ex['passed']}/{ex['total']} passed")
            if cd["total"]:
                card_part = f"cards {cd['seen']}/{cd['total']} seen"
                if cd["due"]:
                    card_part += f", {cd['due']} due"
                if cd["leeches"]:
                    card_part += f", {cd['leeches']} keep slipping"
                parts.append(card_part)
            lines.append(f"  {les['id']:<24} {les['title']:<36} {'; '.join(parts) or '-'}")
    for o in r["not_in_packs"]:
        lines.append("")
        lines.append(
            f"[{o['pack']}] items not in the loaded packs: {o['exercises_passed']}/{o['exercises_attempted']} "
            f"exercises passed, {o['cards_seen']} cards seen"
        )
    t = r["totals"]
    lines.append("")
    lines.append(
        f"{t['attempts']} exercise attempt{'s' * (t['attempts'] != 1)} ({t['exercises_passed']} exercises passed), "
        f"{t['reviews']} card review{'s' * (t['reviews'] != 1)}, {t['due_now']} card{'s' * (t['due_now'] != 1)} due now."
    )
    if t["next_due"] and not t["due_now"]:
        now = datetime.now(timezone.utc)
        lines.append(f"Next card due {when(datetime.fromisoformat(t['next_due']), now)}.")
    if r["position"]:
        p = r["position"]
        where = f"{p['lesson']}/{p['exercise']}" if p["exercise"] else p["lesson"]
        lines.append(f"Last position: {where} [{p['pack']}].")
    return "\n".join(lines)


# ---------------------------------------------------------------- export and import


def run_set(args: argparse.Namespace) -> int:
    """``progress set NAME VALUE``: numbers are read as JSON, anything else as text."""
    try:
        value: object = json.loads(args.value)
    except ValueError:
        value = args.value
    if args.name == "language" and not isinstance(value, str):
        value = args.value
    with _open_store(args) as store:
        try:
            settings = store.update_settings(**{args.name: value})
        except ValueError as exc:
            raise TutorError(str(exc)) from None
    print(f"{args.name} is now {getattr(settings, args.name)!r}.")
    return 0


def run_export(args: argparse.Namespace) -> int:
    target = None if args.file == "-" else Path(args.file).expanduser()
    if target is not None and not target.parent.is_dir():
        # A typo in the folder should not quietly create a tree of folders somewhere.
        raise TutorError(f"cannot write {target}: the folder {target.parent} does not exist")
    if getattr(args, "anki", False):
        from tutor.commands.anki import run_export_anki

        return run_export_anki(args)
    with _open_store(args, readonly=True) as store:
        data = store.export()
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    if target is None:
        sys.stdout.write(text)
        return 0
    _write_atomically(target, text)
    n_att, n_rev = len(data["attempts"]), len(data["reviews"])
    print(f"Exported {n_att} attempt{'s' * (n_att != 1)} and {n_rev} review{'s' * (n_rev != 1)} to {target}.")
    return 0


def _write_atomically(target: Path, text: str) -> None:
    """Write beside the target, then rename: a crash never leaves half an export."""
    from tutor.files import describe, write_atomic

    try:
        write_atomic(target, text)
    except OSError as exc:
        raise TutorError(f"cannot write {target}: {describe(exc)}") from None


def run_import(args: argparse.Namespace) -> int:
    name = "stdin" if args.file == "-" else args.file
    from tutor.progress.transfer import MAX_EXPORT_BYTES, parse, read_export, validate

    # Read and validate before opening the store, so a bad file cannot even create a database.
    try:
        if args.file == "-":
            data = validate(parse(sys.stdin.buffer.read(MAX_EXPORT_BYTES + 1)))
        else:
            data = read_export(Path(args.file).expanduser())
    except OSError as exc:
        raise TutorError(f"cannot import {name}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise TutorError(f"cannot import {name}: {exc}") from None
    with _open_store(args) as store:
        try:
            added = store.import_(data)
        except ValueError as exc:
            raise TutorError(f"cannot import {name}: {exc}") from None
    if not any(added.values()):
        print(f"Nothing new in {name}: everything in it is already here.")
    else:
        parts = []
        for kind, n in added.items():
            if n:
                words = kind.replace("_", " ")  # quiz_lessons: "2 quiz lessons", "1 quiz lesson"
                parts.append(f"{n} {words if n != 1 else words[:-1]}")
        print(f"Imported from {name}: {', '.join(parts)}.")
    return 0
