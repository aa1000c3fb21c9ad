"""``progress export --anki``: the .apkg read back as what it is, a zip holding SQLite."""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import pytest
from test_app_support import PACK_FILES, make_pack

from tutor.cli import main


def read_apkg(path: Path, tmp_path: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        assert "collection.anki2" in z.namelist()
        db = tmp_path / f"{path.stem}.anki2"
        db.write_bytes(z.read("collection.anki2"))
    conn = sqlite3.connect(db)
    try:
        notes = conn.execute("SELECT guid, mid, flds, tags FROM notes").fetchall()
        cards = conn.execute("SELECT cards.did, notes.guid FROM cards JOIN notes ON cards.nid = notes.id").fetchall()
        revlog = conn.execute("SELECT cid, ease FROM revlog").fetchall()
    finally:
        conn.close()
    return {"notes": notes, "cards": cards, "revlog": revlog}


def no_predict_pack(root: Path) -> Path:
    """The app tests' pack without its predict card (that one needs a kernel: the slow test)."""
    pack = make_pack(root)
    lesson = pack / "basics" / "lesson.yaml"
    text = lesson.read_text()
    start = text.index("  - id: predict-sum")
    end = text.index("  - id: cloze-dtype")
    lesson.write_text(text[:start] + text[end:])
    return pack


@pytest.mark.slow  # the built-in pack's predict cards run in a kernel
def test_every_card_once_and_a_second_export_updates_the_same_notes(tmp_path: Path, capsys):
    pack = no_predict_pack(tmp_path / "pack")
    home = tmp_path / "home"
    args = ["--data-dir", str(home), "--pack", str(pack)]
    from tutor.packs.catalog import Catalog

    cards = list(Catalog.load([str(pack)]).cards())
    assert main([*args, "progress", "export", "--anki", str(tmp_path / "one.apkg")]) == 0
    assert "Importing it again into Anki updates these notes." in capsys.readouterr().out
    one = read_apkg(tmp_path / "one.apkg", tmp_path)
    guids = [g for g, *_ in one["notes"]]
    assert len(guids) == len(set(guids)) == len(cards)  # every card, once
    assert len(one["cards"]) == len(cards)  # one Anki card per note: a cloze's blanks are all c1

    # Some reviews, then export again with the history: same notes (guids, note types, decks).
    from tutor.progress import ProgressStore

    with ProgressStore.open(home) as store:
        store.review("apptest", "basics/default-dtype", True)
        store.review("apptest", "basics/numel", False)
    assert main([*args, "progress", "export", "--anki", str(tmp_path / "two.apkg"), "--reviews"]) == 0
    two = read_apkg(tmp_path / "two.apkg", tmp_path)
    assert sorted(n[:2] for n in two["notes"]) == sorted(n[:2] for n in one["notes"])
    assert sorted(c[0] for c in two["cards"]) == sorted(c[0] for c in one["cards"])
    assert sorted(ease for _, ease in two["revlog"]) == [1, 3]
    assert one["revlog"] == []

    ours = [(tags.split(), flds.split("\x1f")) for _, _, flds, tags in two["notes"] if "ptfund::apptest" in tags]
    by_type = {tags[-1]: flds for tags, flds in ours}
    assert "{{c1::float32}}" in by_type["type::cloze"][0] and "{{c1::cpu}}" in by_type["type::cloze"][0]
    assert "float32" in by_type["type::choice"][1]
    assert by_type["type::numeric"][1] == "6"


def test_an_anki_deck_is_a_file_not_stdout(tmp_path: Path, capsys):
    assert main(["--data-dir", str(tmp_path / "home"), "progress", "export", "--anki", "-"]) == 2
    assert "not -" in capsys.readouterr().err


@pytest.mark.slow
def test_predict_keys_come_from_a_kernel(tmp_path: Path, capsys):
    """The exported answer is what torch prints now, not the key written in the pack."""
    pack = make_pack(tmp_path / "pack")
    lesson = pack / "basics" / "lesson.yaml"
    assert 'expected: "2"' in PACK_FILES["basics/lesson.yaml"]
    lesson.write_text(
        lesson.read_text().replace("print(1 + 1)", "import torch\n      print(torch.arange(3).sum().item() + 40)")
    )
    args = ["--data-dir", str(tmp_path / "home"), "--pack", str(pack)]
    assert main([*args, "progress", "export", "--anki", str(tmp_path / "deck.apkg"), "--trust"]) == 0
    notes = read_apkg(tmp_path / "deck.apkg", tmp_path)["notes"]
    predict = next(
        flds.split("\x1f") for _, _, flds, tags in notes if "ptfund::apptest" in tags and "type::predict" in tags
    )
    assert "torch.arange(3)" in predict[0]
    assert predict[1] == "<pre><code>43</code></pre>"
