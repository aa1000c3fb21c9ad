"""Warm verdicts from the shell: one background server per data dir keeps fresh kernels
warm for ``check`` and ``watch`` (docs/warm-server.md). ``client`` is what a command
imports (the standard library only); ``server`` is the process."""
