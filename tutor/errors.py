"""Errors a user or author can cause: the CLI prints them as one line, never a traceback."""


class TutorError(Exception):
    """A problem to report in one sentence. ``exit_code``: see "The command line" in docs/architecture.md."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
