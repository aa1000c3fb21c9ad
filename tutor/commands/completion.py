"""``completion SHELL``: the script that makes bash, zsh or fish complete ptfund-tutor's
commands and options (argcomplete; tutor/cli.py answers the shell's requests)."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["ptfund-tutor"], shell=args.shell))
    return 0
