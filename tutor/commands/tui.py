"""The default command: open the terminal app.

Imports textual only here, when the app is wanted; the app itself defers every heavy
import (pydantic, jupyter_client) until after the first paint.
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    # textual-image asks the terminal which graphics it speaks (Kitty, Sixel, or neither:
    # half blocks) when first imported; once the app reads the terminal, it cannot.
    import textual_image.widget  # noqa: F401

    from tutor.app.app import TutorApp, TutorOptions

    options = TutorOptions(
        packs=list(args.pack or []),
        data_dir=args.data_dir,
        device=args.device,
        kernel=args.kernel,
    )
    app = TutorApp(options)
    app.run()
    return app.return_code or 0
