#!/usr/bin/env bash
# `ptfund-tutor watch` in a real terminal: the first exercise's file is saved three times, as
# three editors save (written in place; vim's rename of the old file and a new write; VS
# Code's atomic replace of a temporary file), wrong, wrong and right: three verdicts, then
# the next exercise. A hint key answers at once; the attempts are in the progress store.
#
# Usage: tests/tmux_watch.sh     (uses the ptfund-tutor on PATH)
# Every wait polls the screen with a deadline; nothing sleeps a fixed time to make it work.
set -euo pipefail

PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptfund-watch.XXXXXX")
DATA="$WORK/data"
DIR="$WORK/exercises"
SOCKET="ptfund-watch-$$"   # a private tmux server: never touches the user's sessions
SESSION=watch
. "$(dirname "$0")/tmux_lib.sh"
stop_warm() {
    "$PYTHON" -c "import sys; from pathlib import Path; from tutor.grading.warm.client import stop_server; stop_server(Path(sys.argv[1]))" "$DATA" || true
    cleanup
}
trap stop_warm EXIT

# history: the whole pane, scrolled-off lines included.
history() { T capture-pane -p -S - -t "$SESSION" 2>/dev/null || true; }

# wait_count TEXT N [SECONDS]: until TEXT is in the pane's history N times.
wait_count() {
    local text=$1 n=$2 limit=${3:-180}
    local deadline=$((SECONDS + limit))
    until [ "$(history | grep -cF -- "$text")" -ge "$n" ]; do
        [ $SECONDS -lt $deadline ] || { history >&2; fail "waited ${limit}s for $n x: $text"; }
        sleep 0.2
    done
}

"$PYTHON" - "$WORK" <<'PY'
import sys
from pathlib import Path
from tutor.packs.catalog import Catalog
refs = list(Catalog.load().exercises(lesson="tensors"))
work = Path(sys.argv[1])
(work / "first").write_text(refs[0].key)
(work / "next").write_text(refs[1].key)
(work / "solution.py").write_text(refs[0].exercise.solution)
PY
FIRST=$(cat "$WORK/first")
NEXT=$(cat "$WORK/next")
FILE="$DIR/$FIRST.py"

T new-session -d -s "$SESSION" -x 120 -y 40 \
    "ptfund-tutor --data-dir '$DATA' watch '$DIR' --lesson tensors; echo \"WATCH EXITED \$?\"; sleep 600"
wait_for "and save it to check it." 60
[ -f "$FILE" ] || fail "no starter file $FILE"
grep -qF "# $FIRST:" "$FILE" || fail "the starter file does not begin with the prompt"
keys h
wait_for "Hint 1 of" 10

# 1. wrong, written in place (the same inode, truncated and rewritten)
printf 'x = 1\n' >"$FILE"
wait_count "✗ $FIRST:" 1

# 2. wrong, as vim writes with backupcopy=no: the old file renamed away, a new one written
mv "$FILE" "$FILE~"
printf 'y = 2\n' >"$FILE"
rm "$FILE~"
wait_count "✗ $FIRST:" 2

# 3. right, as VS Code writes: a temporary file renamed over the old one
cp "$WORK/solution.py" "$DIR/tensors/.vscode-save.tmp"
mv -f "$DIR/tensors/.vscode-save.tmp" "$FILE"
wait_count "✓ $FIRST:" 1
wait_for "Next exercise: $NEXT" 30
wait_for "── $NEXT:" 10
[ "$(history | grep -cF "Checking ")" -eq 3 ] || fail "expected exactly three checks"

keys x
wait_for "WATCH EXITED 0" 30
attempts=$("$PYTHON" -c "
import sys
from tutor.progress.store import ProgressStore
store = ProgressStore.open(sys.argv[1])
print(sum(1 for a in store.attempts_for('pytorch-fundamentals', sys.argv[2])))
" "$DATA" "$FIRST")
[ "$attempts" -eq 3 ] || fail "expected 3 attempts in the progress store, found $attempts"
echo PASS
