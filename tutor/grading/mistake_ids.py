"""The stable id of each mistake a verdict names, so a class report can count who made it.

An authored mistake is known by its ``id:`` in the pack (else a hash of its message, see
tutor/packs/models.py); an automatic diagnosis by ``auto:TOPIC`` where the check library
gives it a topic, else by ``auto:`` and a hash of its sentence with the numbers masked (the
same bug in another learner's code often differs only in a count or a size).
"""

from __future__ import annotations

import hashlib
import re

AUTO = "auto:"
_NUMBER = re.compile(r"\d+(\.\d+)?")


def diagnosis_id(sentence: str) -> str:
    masked = _NUMBER.sub("N", sentence)
    return AUTO + hashlib.sha256(masked.encode("utf-8")).hexdigest()[:10]


def is_automatic(mistake_id: str) -> bool:
    return mistake_id.startswith(AUTO)


def ids_by_message(result: dict) -> dict[str, str]:
    """message -> id for the check library's result (the first id a message came with)."""
    messages = result.get("mistakes") or []
    given = result.get("mistake_ids")
    given = given if isinstance(given, list) and len(given) == len(messages) else [None] * len(messages)
    out: dict[str, str] = {}
    for message, mistake_id in zip(messages, given, strict=True):
        if isinstance(message, str) and message not in out:
            out[message] = mistake_id if isinstance(mistake_id, str) and mistake_id else diagnosis_id(message)
    return out
