#!/usr/bin/env bash
# A new learner's first minutes in a real terminal (issue 13): the palette opens an exercise
# by name; PyTorch's advice at the end of a long traceback is on screen (wrapped, ↪); a loop
# is stopped with ctrl+c while it runs, the app staying up; a figure drawn with matplotlib
# shows beside the output; a check shows its clock and the code's output and stops with f6;
# one Esc leaves the editor for home.
#
# Usage: tests/tmux_first_hour.sh [COLUMNS ROWS]   (default 120 40; uses the ptfund-tutor on PATH)
# Every wait polls the screen with a deadline; nothing sleeps a fixed time to make it work.
set -euo pipefail

COLS=${1:-120}
ROWS=${2:-40}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptfund-hour.XXXXXX")
SOCKET="ptfund-hour-$$"   # a private tmux server: never touches the user's sessions
SESSION=tutor
. "$(dirname "$0")/tmux_lib.sh"

# The screen with wrapped rows joined back (a row starting with the ↪ mark continues the last).
joined() { screen | sed -E 's/^.*↪ //' | tr -d '\n'; }

# clear_editor: select all and delete until the editor is empty (its first row, beside the
# tabs, shows the line number 1 and nothing else, and there is no line 2); a key can arrive while the app is busy
# with the last one, so it is repeated if needed.
editor_empty() {
    local shot
    shot=$(screen)
    grep -qE 'Exercise +Lesson +1 *$' <<<"$shot" && ! grep -qE '━ 2( |$)' <<<"$shot"
}
clear_editor() {
    local deadline=$((SECONDS + 30)) until_gone
    until editor_empty; do
        [ $SECONDS -lt $deadline ] || fail "the editor did not clear"
        keys F7
        keys Delete
        until_gone=$((SECONDS + 2))
        until editor_empty || [ $SECONDS -ge $until_gone ]; do sleep 0.2; done
    done
}

T new-session -d -s "$SESSION" -x "$COLS" -y "$ROWS" "ptfund-tutor --data-dir '$WORK/data'"
wait_for "Views, strides and copies" 60

# the palette opens an exercise by name
keys C-p
wait_for "🔎" 10
keys -l "A transpose is a view"
wait_for "Exercise: A transpose is a view" 10
keys Enter
wait_for "1/3 A transpose is a view" 20
wait_for "kernel ready" 180

# a long error line: PyTorch's advice at its end is on the screen, wrapped with the mark
clear_editor
keys -l "a = torch.arange(12).reshape(3, 4); a.t().view(12)"
keys C-r
wait_for "RuntimeError" 60
wait_for "↪" 10
deadline=$((SECONDS + 10))
until screen | grep -qF "instead."; do
    [ $SECONDS -lt $deadline ] || fail "the end of PyTorch's advice is not on the screen"
    sleep 0.2
done

# ctrl+c stops running code (the editor has the focus, where it is otherwise copy)
clear_editor
keys -l "import time"
keys Enter
keys -l "for i in range(600): print('tick', i, flush=True); time.sleep(0.1)"
keys C-r
wait_for "tick 3" 30
keys C-c
wait_for "interrupted" 30
screen | grep -qF "quit" && fail "ctrl+c offered to quit"

# a figure: half blocks beside the output, announced in the text
clear_editor
keys -l "import matplotlib.pyplot as plt; plt.plot([3, 2, 1]); plt.show()"
keys C-r
wait_for "Figure 1" 60
wait_for "▀▀▀▀" 10    # the picture may paint a frame after its announcement

# a check shows its clock and the code's output; f6 stops it and nothing is recorded
clear_editor
keys -l "import time"
keys Enter
keys -l "for i in range(600): print('tick', i, flush=True); time.sleep(0.1)"
keys C-t
wait_for "Checking your code" 60
wait_for "tick 3" 60
keys F6
wait_for "Check stopped" 30

# one Esc from the editor goes home
keys Escape
wait_for "press c to continue" 10 || true
wait_for "Recall quiz" 10
echo "PASS"
