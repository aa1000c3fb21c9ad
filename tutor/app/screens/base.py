"""The base of the app's full screens: ``self.app`` typed as the tutor's app, and failed
workers reported.

Textual types ``Screen.app`` as a plain ``App``; the screens read the tutor's own
attributes (store, catalog, kernels, trust). Declaring the narrower type here, for type
checkers only, keeps every ``self.app.store`` checked without a cast at each use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from textual.screen import Screen

if TYPE_CHECKING:
    from textual import getters
    from textual.worker import Worker

    from tutor.app.app import TutorApp

ResultType = TypeVar("ResultType")


class TutorScreen(Screen[ResultType]):
    if TYPE_CHECKING:
        app = getters.app(TutorApp)  # as Textual's own widgets declare it (type checkers only)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Runs before (and as well as) any handler a screen defines: Textual calls each
        # class's handler along the inheritance chain.
        self.app.report_failed_worker(event)
