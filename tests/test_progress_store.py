"""The progress store: records, scheduling, changed content, migrations, damage, threads."""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime, timedelta, timezone

import pytest
from fsrs import Rating, State

from tutor.errors import TutorError
from tutor.progress import LEECH_LAPSES, ProgressStore, schema
from tutor.progress.database import FILENAME

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path):
    s = ProgressStore(tmp_path / FILENAME, fuzz=False)
    yield s
    s.close()


# ---------------------------------------------------------------- opening


def test_new_database_uses_wal_and_current_schema(tmp_path):
    path = tmp_path / FILENAME
    with ProgressStore(path) as s:
        assert s.notice is None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    conn.close()


def test_open_in_data_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PTFUND_TUTOR_HOME", str(tmp_path / "home"))
    with ProgressStore.open() as s:
        assert s.path == tmp_path / "home" / FILENAME
    with ProgressStore.open(tmp_path / "other") as s:
        assert s.path == tmp_path / "other" / FILENAME


def test_unwritable_data_dir_is_one_sentence(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TutorError, match="cannot create the data dir"):
        ProgressStore.open(blocker / "sub")


def test_upgrade_from_v1_database_keeps_everything(tmp_path):
    """A database made by schema v1 (kept verbatim in MIGRATIONS) opens with today's code."""
    path = tmp_path / FILENAME
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    schema.apply(conn, target=1)
    conn.execute("COMMIT")
    assert schema.user_version(conn) == 1
    conn.execute(
        "INSERT INTO attempts (pack, item, passed, at, code, content_hash) VALUES "
        "('core', 'tensors/zeros', 1, '2024-04-01T10:00:00.000000+00:00', 't = 1', 'h1'),"
        "('core', 'tensors/zeros', 0, '2024-04-01T09:00:00.000000+00:00', 't = 0', 'h1')"
    )
    conn.execute(
        "INSERT INTO cards (pack, item, state, step, stability, difficulty, due, last_review, first_review, reps, lapses, content_hash) "
        "VALUES ('core', 'tensors/dtype', 2, NULL, 3.2, 5.0, '2024-04-05T10:00:00.000000+00:00', "
        "'2024-04-01T10:00:00.000000+00:00', '2024-03-30T10:00:00.000000+00:00', 3, 1, 'c1')"
    )
    conn.execute(
        "INSERT INTO reviews (pack, item, rating, correct, at, content_hash) VALUES "
        "('core', 'tensors/dtype', 3, 1, '2024-04-01T10:00:00.000000+00:00', 'c1')"
    )
    conn.execute(
        "INSERT INTO drafts VALUES ('core', 'tensors/zeros', 'draft', '2024-04-01T10:00:00.000000+00:00', 'h1')"
    )
    conn.execute("INSERT INTO settings VALUES ('new_cards_per_day', '5')")
    conn.close()

    with ProgressStore(path, fuzz=False) as s:
        assert s.notice is None
        attempts = s.attempts_for("core", "tensors/zeros")
        assert [a.code for a in attempts] == ["t = 0", "t = 1"]  # time order
        assert all(len(a.uid) == 32 for a in attempts) and attempts[0].uid != attempts[1].uid
        state = s.card_state("core", "tensors/dtype")
        assert state.state == State.Review and state.reps == 3 and state.lapses == 1
        assert [r.rating for r in s.reviews_for("core", "tensors/dtype")] == [Rating.Good]
        assert s.load_draft("core", "tensors/zeros").code == "draft"
        assert s.settings().new_cards_per_day == 5
        # v2 features work on the upgraded file
        s.record_hint("core", "tensors/zeros", 0)
        assert s.hints_used("core", "tensors/zeros") == 1
        s.review("core", "tensors/dtype", True, datetime(2024, 4, 6, tzinfo=timezone.utc), content_hash="c1")
        exported = s.export()
        assert len({r["uid"] for r in exported["reviews"]}) == 2
    conn = sqlite3.connect(path)
    assert schema.user_version(conn) == schema.SCHEMA_VERSION
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_database_from_a_newer_version_is_refused_and_left_alone(tmp_path):
    path = tmp_path / FILENAME
    ProgressStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(TutorError, match="newer ptfund-tutor"):
        ProgressStore(path)
    assert path.exists() and not list(tmp_path.glob("*.corrupt-*"))


def test_garbage_file_is_moved_aside_and_a_fresh_one_started(tmp_path):
    path = tmp_path / FILENAME
    path.write_bytes(b"\x00garbage" * 1000)
    (tmp_path / (FILENAME + "-wal")).write_bytes(b"stale wal")
    with ProgressStore(path) as s:
        assert s.notice is not None
        assert "damaged" in s.notice and ".corrupt-" in s.notice and s.notice.endswith("fresh one was started.")
        s.record_attempt("p", "l/e", passed=True, code="", content_hash="h")
        assert len(s.attempts_for("p", "l/e")) == 1
    aside = [p for p in tmp_path.glob(FILENAME + ".corrupt-*") if not p.name.endswith("-wal")]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"\x00garbage")
    # the stale WAL went with the damaged file (or SQLite dropped it): never into the new one
    with ProgressStore(tmp_path / FILENAME) as s:
        assert s.notice is None and len(s.attempts_for("p", "l/e")) == 1


def test_damaged_pages_fail_the_integrity_check_and_are_moved_aside(tmp_path):
    path = tmp_path / FILENAME
    with ProgressStore(path) as s:
        for i in range(300):
            s.record_attempt("p", f"l/e{i}", passed=bool(i % 2), code="x = 1\n" * 50, content_hash="h")
    data = bytearray(path.read_bytes())
    assert len(data) > 20 * 4096
    # Keep the header (page 1) valid so SQLite opens it; scribble over b-tree pages.
    for page in range(2, len(data) // 4096, 3):
        data[page * 4096 : page * 4096 + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    with ProgressStore(path) as s:
        assert s.notice and "damaged" in s.notice
        assert s.attempts_for("p", "l/e1") == []
    assert len(list(tmp_path.glob(FILENAME + ".corrupt-*"))) == 1


# ---------------------------------------------------------------- exercises, drafts, hints, position


def test_attempts_are_kept_in_order_with_their_content_hash(store):
    a = store.record_attempt("core", "tensors/zeros", passed=False, code="t = 0", content_hash="h1", at=T0)
    b = store.record_attempt(
        "core", "tensors/zeros", passed=True, code="t = 1", content_hash="h2", at=T0 + timedelta(minutes=1)
    )
    got = store.attempts_for("core", "tensors/zeros")
    assert [x.id for x in got] == [a, b]
    assert [(x.passed, x.code, x.content_hash) for x in got] == [(False, "t = 0", "h1"), (True, "t = 1", "h2")]
    assert got[0].at == T0 and got[0].at.tzinfo == timezone.utc
    stats = store.exercise_stats()[("core", "tensors/zeros")]
    assert stats.attempts == 2 and stats.passed and stats.content_hash == "h2"
    assert store.attempts_for("core", "other/x") == []


def test_naive_and_offset_datetimes_are_stored_as_utc(store):
    plus2 = timezone(timedelta(hours=2))
    store.record_attempt(
        "p", "l/e", passed=True, code="", content_hash="h", at=datetime(2024, 5, 1, 14, 0, tzinfo=plus2)
    )
    assert store.attempts_for("p", "l/e")[0].at == T0


def test_drafts_keep_the_latest_code(store):
    assert store.load_draft("core", "tensors/zeros") is None
    for i in range(5):
        store.save_draft("core", "tensors/zeros", f"t = {i}", content_hash="h1", at=T0 + timedelta(seconds=i))
    d = store.load_draft("core", "tensors/zeros")
    assert d.code == "t = 4" and d.content_hash == "h1" and d.updated_at == T0 + timedelta(seconds=4)
    store.delete_draft("core", "tensors/zeros")
    assert store.load_draft("core", "tensors/zeros") is None


def test_hints_count_each_hint_once(store):
    assert store.hints_used("core", "tensors/zeros") == 0
    store.record_hint("core", "tensors/zeros", 0, content_hash="h1")
    store.record_hint("core", "tensors/zeros", 0, content_hash="h1")
    store.record_hint("core", "tensors/zeros", 1, content_hash="h1")
    assert store.hints_used("core", "tensors/zeros") == 2


def test_position_is_the_last_one_set(store):
    assert store.position() is None
    store.set_position("core", "tensors", "zeros")
    store.set_position("core", "views-strides")
    p = store.position()
    assert (p.pack, p.lesson, p.exercise) == ("core", "views-strides", None)


def test_settings_defaults_and_validation(store):
    s = store.settings()
    assert s.desired_retention == 0.9 and s.new_cards_per_day == 20
    assert store.update_settings(desired_retention=0.85, new_cards_per_day=5).new_cards_per_day == 5
    assert store.settings().desired_retention == 0.85
    for bad in ({"desired_retention": 1.5}, {"new_cards_per_day": -1}, {"new_cards_per_day": True}, {"colour": "red"}):
        with pytest.raises(ValueError):
            store.update_settings(**bad)
    assert store.settings().new_cards_per_day == 5


# ---------------------------------------------------------------- scheduling


def test_right_is_good_and_wrong_is_again(store):
    s = store.review("core", "tensors/c1", True, T0, content_hash="c")
    assert s.state == State.Learning and s.due == T0 + timedelta(minutes=10)  # Good: second learning step
    s = store.review("core", "tensors/c1", True, T0 + timedelta(minutes=10))
    assert s.state == State.Review and s.due - (T0 + timedelta(minutes=10)) >= timedelta(days=1)
    later = s.due
    s = store.review("core", "tensors/c1", False, later)
    assert s.state == State.Relearning and s.due == later + timedelta(minutes=10) and s.lapses == 1
    assert [r.rating for r in store.reviews_for("core", "tensors/c1")] == [Rating.Good, Rating.Good, Rating.Again]
    assert [r.correct for r in store.reviews_for("core", "tensors/c1")] == [True, True, False]
    wrong_first = store.review("core", "tensors/c2", False, T0)
    assert wrong_first.state == State.Learning and wrong_first.due == T0 + timedelta(minutes=1)


def test_desired_retention_changes_intervals(tmp_path):
    def interval(retention: float) -> timedelta:
        with ProgressStore(tmp_path / f"r{retention}.sqlite3", fuzz=False) as s:
            s.update_settings(desired_retention=retention)
            t = T0
            for _ in range(4):
                st = s.review("p", "l/c", True, t)
                t = st.due
            return st.due - st.last_review

    assert interval(0.95) < interval(0.9) < interval(0.8)


def test_a_card_missed_eight_times_is_a_leech(store):
    t = T0
    for _ in range(LEECH_LAPSES):
        assert not store.card_state("core", "tensors/c1") or not store.card_state("core", "tensors/c1").leech
        t = store.review("core", "tensors/c1", False, t).due
    s = store.card_state("core", "tensors/c1")
    assert s.lapses == LEECH_LAPSES and s.leech
    assert store.review("core", "tensors/c1", True, t).leech  # still flagged after a right answer


def test_due_cards_orders_due_first_and_limits_new_per_day(store):
    keys = [("core", f"l/c{i}") for i in range(10)]
    store.add_quiz_lesson("core", "l")
    store.review("core", "l/c3", True, T0 - timedelta(days=3))  # due T0-3d+10min
    store.review("core", "l/c5", True, T0 - timedelta(days=4))  # due earlier
    store.review("core", "l/c7", True, T0)  # due in 10 minutes: not due at T0
    store.update_settings(new_cards_per_day=3)
    d = store.due_cards(keys, T0)
    assert d.due == [("core", "l/c5"), ("core", "l/c3")]
    # c7 was started "today" (T0's local day) so only 2 more new cards are allowed.
    assert d.new_today == 1 and d.new_allowed == 2
    assert d.new == [("core", "l/c0"), ("core", "l/c1")]
    assert store.due_cards(keys, T0, new_limit=0).new == []
    # keys not offered (a card removed from its pack) are never returned
    assert store.due_cards(keys[:4], T0).due == [("core", "l/c3")]


def test_new_card_budget_refills_the_next_day(store):
    keys = [("core", f"l/c{i}") for i in range(5)]
    store.add_quiz_lesson("core", "l", "added")
    store.update_settings(new_cards_per_day=2)
    for k in store.due_cards(keys, T0).new:
        store.review(*k, True, T0)
    assert store.due_cards(keys, T0).new == []
    assert len(store.due_cards(keys, T0 + timedelta(days=1)).new) == 2


def test_new_cards_come_only_from_lessons_in_the_quiz(store):
    keys = [("core", f"{lesson}/c{i}") for lesson in ("one", "two", "three") for i in range(3)]
    store.review("core", "three/c0", True, T0 - timedelta(days=3))  # reviewed before: due, lesson or not
    d = store.due_cards(keys, T0)
    assert d.due == [("core", "three/c0")] and d.new == [] and d.unopened == 8
    assert store.add_quiz_lesson("core", "two", "opened", at=T0)
    assert not store.add_quiz_lesson("core", "two", "added", at=T0)  # already in: the first reason stays
    store.add_quiz_lesson("core", "one", "named", at=T0 + timedelta(seconds=1))
    store.add_quiz_lesson("other", "three", "added", at=T0 + timedelta(seconds=2))  # another pack's lesson
    d = store.due_cards(keys, T0)
    assert d.new == [("core", f"{lesson}/c{i}") for lesson in ("one", "two") for i in range(3)]
    assert d.unopened == 2
    assert store.quiz_lessons() == {("core", "two"): "opened", ("core", "one"): "named", ("other", "three"): "added"}
    with pytest.raises(ValueError, match="opened, named, added"):
        store.add_quiz_lesson("core", "x", "seen")


def test_upgrade_counts_lessons_already_worked_on_as_opened(tmp_path):
    path = tmp_path / FILENAME
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    schema.apply(conn, target=2)
    conn.execute("COMMIT")
    conn.execute(
        "INSERT INTO attempts (uid, pack, item, passed, at, code, content_hash) VALUES "
        "('u1', 'core', 'tensors/zeros', 1, '2024-04-01T10:00:00.000000+00:00', '', 'h')"
    )
    conn.execute("INSERT INTO drafts VALUES ('core', 'views/t', 'x', '2024-04-02T10:00:00.000000+00:00', NULL)")
    conn.execute("INSERT INTO position VALUES (1, 'core', 'autograd', NULL, '2024-04-03T10:00:00.000000+00:00')")
    conn.close()
    with ProgressStore(path) as s:
        assert s.quiz_lessons() == {
            ("core", "tensors"): "opened",
            ("core", "views"): "opened",
            ("core", "autograd"): "opened",
        }


def test_changed_items_and_changed_cards(store):
    store.review("core", "l/card", True, T0, content_hash="c1")
    store.record_attempt("core", "l/ex", passed=True, code="", content_hash="e1", at=T0)
    store.save_draft("core", "l/drafted", "x", content_hash="d1")
    current = {("core", "l/card"): "c2", ("core", "l/ex"): "e1", ("core", "l/drafted"): "d2", ("core", "l/new"): "n"}
    assert store.changed_items(current) == {("core", "l/card"), ("core", "l/drafted")}
    state = store.card_state("core", "l/card")
    assert state.changed("c2") and not state.changed("c1")
    # history kept; reviewing again records the new content and clears the flag
    store.review("core", "l/card", True, T0 + timedelta(minutes=10), content_hash="c2")
    assert len(store.reviews_for("core", "l/card")) == 2
    assert not store.card_state("core", "l/card").changed("c2")
    assert ("core", "l/card") not in store.changed_items(current)
    # a newer attempt with the new content clears an exercise too
    store.record_attempt("core", "l/ex", passed=True, code="", content_hash="e2", at=T0 + timedelta(hours=1))
    assert ("core", "l/ex") in store.changed_items(current)


# ---------------------------------------------------------------- export / import


def _fill(s: ProgressStore, tag: str) -> None:
    s.record_attempt("core", "l/ex", passed=tag == "b", code=f"code {tag}", content_hash="e1", at=T0)
    s.record_hint("core", "l/ex", 0, at=T0)
    s.save_draft("core", "l/ex", f"draft {tag}", at=T0 + (timedelta(hours=1) if tag == "b" else timedelta(0)))
    t = T0
    for correct in (True, True, tag == "a"):
        t = s.review("core", f"l/card-{tag}", correct, t, content_hash="c1").due
    s.review(
        "core", "l/shared", tag == "a", T0 + (timedelta(hours=2) if tag == "b" else timedelta(0)), content_hash="s1"
    )
    s.set_position("core", f"lesson-{tag}", at=T0 + (timedelta(days=1) if tag == "b" else timedelta(0)))
    s.add_quiz_lesson("core", f"lesson-{tag}", at=T0)


def test_export_is_versioned_json(store):
    _fill(store, "a")
    data = json.loads(json.dumps(store.export()))
    assert data["format"] == "ptfund-tutor-progress" and data["version"] == 1
    assert {"attempts", "hints", "drafts", "cards", "reviews", "position", "settings", "quiz_lessons"} <= set(data)


def test_import_into_empty_store_reproduces_everything_and_is_idempotent(tmp_path, store):
    _fill(store, "a")
    store.update_settings(new_cards_per_day=7)
    data = store.export()
    with ProgressStore(tmp_path / "other.sqlite3", fuzz=False) as other:
        added = other.import_(data)
        assert added["attempts"] == 1 and added["reviews"] == 4 and added["cards"] == 2
        assert added["quiz_lessons"] == 1
        again = other.import_(data)
        assert not any(again.values())
        mine, theirs = store.export(), other.export()
        for part in ("attempts", "hints", "drafts", "cards", "reviews", "position", "settings", "quiz_lessons"):
            assert mine[part] == theirs[part], part


def test_import_merges_two_machines(tmp_path):
    with ProgressStore(tmp_path / "a.sqlite3", fuzz=False) as a, ProgressStore(tmp_path / "b.sqlite3", fuzz=False) as b:
        _fill(a, "a")
        _fill(b, "b")
        a.import_(b.export())
        assert len(a.attempts_for("core", "l/ex")) == 2
        assert a.load_draft("core", "l/ex").code == "draft b"  # newer wins
        assert a.position().lesson == "lesson-b"  # newer wins
        assert a.card_state("core", "l/card-b") is not None
        shared = a.card_state("core", "l/shared")
        # reviewed on both: the merged log is replayed (a right at T0, then b wrong 2 hours later)
        assert shared.reps == 2 and shared.lapses == 1 and shared.last_review == T0 + timedelta(hours=2)
        assert shared.due == T0 + timedelta(hours=2, minutes=1)  # Again in learning: one minute
        assert [r.correct for r in a.reviews_for("core", "l/shared")] == [True, False]
        before = a.export()
        a.import_(b.export())
        after = a.export()
        assert {k: v for k, v in before.items() if k != "exported_at"} == {
            k: v for k, v in after.items() if k != "exported_at"
        }


def test_a_bad_document_writes_nothing(store):
    _fill(store, "a")
    data = store.export()
    with ProgressStore(store.path.with_name("fresh.sqlite3")) as fresh:
        data["reviews"][-1]["at"] = "not a time"
        with pytest.raises(ValueError, match=r"reviews\[3\]\.at"):
            fresh.import_(data)
        assert fresh.attempts_for("core", "l/ex") == []  # the good attempts before it were not written
        for bad, match in (
            ({"format": "something else"}, "not a ptfund-tutor progress export"),
            ({"format": "ptfund-tutor-progress", "version": 99}, "newer ptfund-tutor"),
            ({"format": "ptfund-tutor-progress", "version": 1, "attempts": [{"uid": "u"}]}, r"attempts\[0\]"),
            ({"format": "ptfund-tutor-progress", "version": 1, "settings": {"desired_retention": 7}}, "retention"),
            ([1, 2], "not a ptfund-tutor progress export"),
        ):
            with pytest.raises(ValueError, match=match):
                fresh.import_(bad)
        assert fresh.export()["attempts"] == [] and fresh.export()["settings"] == {}


# ---------------------------------------------------------------- threads


def test_every_method_is_safe_from_worker_threads(store):
    errors = []

    def work(n: int) -> None:
        try:
            for i in range(25):
                store.record_attempt("p", f"l/e{n}", passed=True, code=str(i), content_hash="h")
                store.save_draft("p", f"l/e{n}", str(i))
                store.review("p", f"l/c{n}-{i}", i % 2 == 0, T0)
                store.due_cards([("p", f"l/c{n}-{i}")], T0)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(len(store.attempts_for("p", f"l/e{n}")) for n in range(8)) == 200
    assert store.review_count() == 200


def test_a_write_that_cannot_get_the_lock_is_one_sentence(tmp_path):
    path = tmp_path / FILENAME
    with ProgressStore(path, busy_timeout=0.05) as s:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process mid-write, for longer than the busy timeout
        try:
            with pytest.raises(TutorError, match="could not save progress"):
                s.record_attempt("p", "l/e", passed=True, code="", content_hash="h")
        finally:
            other.execute("ROLLBACK")
            other.close()
        s.record_attempt("p", "l/e", passed=True, code="", content_hash="h")  # and it recovers
        assert len(s.attempts_for("p", "l/e")) == 1


def test_opening_waits_for_a_lock_the_busy_handler_skips(tmp_path):
    """A new file being switched to WAL by another process: opening waits, then succeeds;
    held past the busy timeout, it is one sentence, never a traceback."""
    import threading

    path = tmp_path / FILENAME
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")  # what another process holds while it creates the file
    with pytest.raises(TutorError, match=r"keeps it locked|cannot open"):
        ProgressStore(path, busy_timeout=0.2)
    released = threading.Event()
    threading.Timer(0.3, lambda: (other.execute("COMMIT"), released.set())).start()
    with ProgressStore(path, busy_timeout=10) as s:
        assert released.is_set()
        s.record_attempt("p", "l/e", passed=True, code="", content_hash="h")
    other.close()


# ---------------------------------------------------------------- export/import property

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

_items = hs.sampled_from(["l/a", "l/b", "m/c"])
_times = hs.integers(min_value=0, max_value=60 * 24 * 30).map(lambda m: T0 + timedelta(minutes=m))
_ops = hs.lists(
    hs.one_of(
        hs.tuples(hs.just("attempt"), _items, hs.booleans(), _times),
        hs.tuples(hs.just("review"), _items, hs.booleans(), _times),
        hs.tuples(hs.just("draft"), _items, hs.text(max_size=20), _times),
        hs.tuples(hs.just("hint"), _items, hs.integers(0, 3), _times),
    ),
    max_size=25,
)


def _apply(s: ProgressStore, ops) -> None:
    for kind, item, value, at in ops:
        if kind == "attempt":
            s.record_attempt("p", item, passed=value, code=str(at), content_hash="h", at=at)
        elif kind == "review":
            s.review("p", item, value, at, content_hash="h")
        elif kind == "draft":
            s.save_draft("p", item, value, at=at)
        else:
            s.record_hint("p", item, value, at=at)


def _strip(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "exported_at"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops_a=_ops, ops_b=_ops)
def test_import_is_idempotent_and_order_free_for_any_history(tmp_path_factory, ops_a, ops_b):
    d = tmp_path_factory.mktemp("prop")
    with (
        ProgressStore(d / "a.db", fuzz=False) as a,
        ProgressStore(d / "b.db", fuzz=False) as b,
        ProgressStore(d / "c.db", fuzz=False) as c,
    ):
        _apply(a, ops_a)
        _apply(b, ops_b)
        # a copy of a's history imports exactly
        c.import_(a.export())
        assert _strip(c.export()) == _strip(a.export())
        # merging b in twice equals merging it once; nothing of either side is lost
        c.import_(b.export())
        once = _strip(c.export())
        c.import_(b.export())
        c.import_(a.export())
        assert _strip(c.export()) == once
        assert {r["uid"] for r in once["reviews"]} == {r["uid"] for r in a.export()["reviews"] + b.export()["reviews"]}
        assert {x["uid"] for x in once["attempts"]} == {
            x["uid"] for x in a.export()["attempts"] + b.export()["attempts"]
        }
