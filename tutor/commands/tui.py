"""The default command: open the terminal app.

Imports textual only here, when the app is wanted; the app itself defers every heavy
import (pydantic, jupyter_client) until after the first paint.
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    # Figures: where the terminal may speak Kitty or Sixel graphics, it is asked now; once
    # the app reads the terminal, it cannot be (tutor/app/widgets/figure.py says more).
    from tutor.app.widgets.figure import detect_graphics

    detect_graphics()

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
