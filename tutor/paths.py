"""Where things live: the data dir and the built-in pack. No heavy imports here."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "ptfund-tutor"
ENV_HOME = "PTFUND_TUTOR_HOME"
ENV_CACHE = "PTFUND_TUTOR_CACHE"


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """The learner's data dir: ``--data-dir``, else $PTFUND_TUTOR_HOME, else the platform's."""
    if override:
        path = Path(override).expanduser()
    elif os.environ.get(ENV_HOME):
        path = Path(os.environ[ENV_HOME]).expanduser()
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir(APP_NAME, appauthor=False))
    return path


def cache_dir() -> Path:
    """Derived files safe to delete: $PTFUND_TUTOR_CACHE, else ``cache`` in
    $PTFUND_TUTOR_HOME when that is set (so a test home stays self-contained), else the
    platform's user cache dir."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE]).expanduser()
    if os.environ.get(ENV_HOME):
        return Path(os.environ[ENV_HOME]).expanduser() / "cache"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP_NAME, appauthor=False))


def builtin_pack_dir() -> Path:
    """The built-in pack: inside the wheel when installed, top-level ``lessons/`` in a checkout."""
    here = Path(__file__).resolve().parent
    shipped = here / "_lessons"
    if (shipped / "pack.yaml").is_file():
        return shipped
    return here.parent / "lessons"


def docs_dir() -> Path:
    """The user docs: inside the wheel when installed, top-level ``docs/`` in a checkout."""
    here = Path(__file__).resolve().parent
    shipped = here / "_docs"
    if shipped.is_dir():
        return shipped
    return here.parent / "docs"
