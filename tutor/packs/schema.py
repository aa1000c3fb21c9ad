"""JSON Schema of pack files, for editors that validate YAML as it is typed."""

from __future__ import annotations

from tutor.packs.models import Lesson, PackManifest

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"


def pack_schema(which: str = "all") -> dict:
    """``pack`` for pack.yaml, ``lesson`` for lesson.yaml, ``all`` for one schema matching either."""
    if which == "pack":
        schema = PackManifest.model_json_schema()
    elif which == "lesson":
        schema = Lesson.model_json_schema()
    else:
        lesson = Lesson.model_json_schema()
        manifest = PackManifest.model_json_schema()
        defs = {**lesson.pop("$defs", {}), **manifest.pop("$defs", {})}
        defs["Lesson"], defs["PackManifest"] = lesson, manifest
        schema = {
            "title": "ptfund-tutor pack file (pack.yaml or LESSON/lesson.yaml)",
            "anyOf": [{"$ref": "#/$defs/PackManifest"}, {"$ref": "#/$defs/Lesson"}],
            "$defs": defs,
        }
    return {"$schema": SCHEMA_URI, **schema}
