#!/usr/bin/env bash
# End to end in a real terminal: start ptfund-tutor in tmux, finish the tensors lesson from
# the keyboard (type each solution, check it, read the pass off the screen), quit, reopen,
# and see the position and the typed code restored.
#
# Usage: tests/tmux_e2e.sh        (run from anywhere; uses the ptfund-tutor on PATH)
# Every wait polls the screen with a deadline; nothing sleeps a fixed time to make it work.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptfund-e2e.XXXXXX")
DATA="$WORK/data"
SOCKET="ptfund-e2e-$$"   # a private tmux server: never touches the user's sessions
SESSION=tutor
. "$(dirname "$0")/tmux_lib.sh"

# clear_editor MARKER: select all and delete until MARKER (the starter's last line) is gone.
# A key can arrive while the editor is still taking in the exercise; polling the screen and
# repeating is what a person does when a keypress did not take.
clear_editor() {
    local marker=$1 deadline=$((SECONDS + 30)) until_gone
    while screen | grep -qF -- "$marker"; do
        [ $SECONDS -lt $deadline ] || fail "the editor did not clear"
        keys F7
        keys Delete
        until_gone=$((SECONDS + 2))
        while screen | grep -qF -- "$marker" && [ $SECONDS -lt $until_gone ]; do sleep 0.2; done
    done
}

# type_file FILE: paste a file into the focused editor (a bracketed paste, as a terminal
# sends one): typed line by line, Enter's auto-indent would indent every line twice.
type_file() {
    T load-buffer -b code "$1"
    T paste-buffer -p -d -b code -t "$SESSION"
}

start_app() {
    T new-session -d -s "$SESSION" -x 120 -y 40 \
        "ptfund-tutor --data-dir '$DATA' ${PACK_ARGS:-}; echo \"APP EXITED \$?\"; sleep 600"
}

# ---------------------------------------------------------------- the lesson under test

# The built-in pack is offered only once all its lessons load; until then the same
# tensors lesson is served as an instructor pack (which must be trusted first).
"$PYTHON" - "$REPO" "$WORK" <<'EOF' >"$WORK/plan"
import shlex, shutil, sys
from pathlib import Path
from tutor.packs.catalog import Catalog
repo, work = Path(sys.argv[1]), Path(sys.argv[2])
cat = Catalog.load()
lesson = next((les for _, les in cat.lessons() if les.id == "tensors"), None)
pack_args = ""
if lesson is None:
    from tutor.packs.loader import check_pack
    src = repo / "lessons"
    dst = work / "tensors-pack"
    shutil.copytree(src / "tensors", dst / "tensors")
    (dst / "pack.yaml").write_text(
        'id: tensors-e2e\ntitle: Tensors (e2e)\nversion: "1.0.0"\nlessons: [tensors]\n')
    pack, problems = check_pack(dst)
    assert pack is not None and not problems, problems
    lesson = pack.lesson("tensors")
    pack_args = f"--pack {dst}"
q = shlex.quote
print(f"PACK_ARGS={q(pack_args)}")
print(f"LESSON_TITLE={q(lesson.title[:24])}")
print(f"N={len(lesson.exercises)}")
for i, ex in enumerate(lesson.exercises, 1):
    (work / f"solution{i}.py").write_text(ex.solution)
    print(f"TITLE{i}={q(ex.title[:24])}")
    # the starter's last line as the editor shows it (with its line number), to know the
    # editor holds the starter before typing over it; the lesson text has no line numbers
    numbered = [(n, ln.rstrip()) for n, ln in enumerate(ex.starter.splitlines(), 1) if ln.strip()]
    n, last = numbered[-1]
    print(f"STARTER{i}={q(f' {n}  {last[:20]}')}")
EOF
# shellcheck disable=SC1091
. "$WORK/plan"
echo "tensors lesson: $N exercises; ${PACK_ARGS:-built-in pack}"

# ---------------------------------------------------------------- first session

start_app
wait_for "Lessons" 30
wait_for "$LESSON_TITLE" 30
keys Enter                                   # the first lesson is highlighted: tensors
wait_for "1/$N $TITLE1" 30
wait_for "kernel ready" 180

for i in $(seq 1 "$N"); do
    title_var="TITLE$i"
    starter_var="STARTER$i"
    wait_for "$i/$N ${!title_var}" 30
    wait_for "${!starter_var}" 30            # the starter is loaded into the editor
    clear_editor "${!starter_var}"           # select all + delete: the starter goes
    type_file "$WORK/solution$i.py"
    keys C-t                                 # check in a fresh kernel
    got=$(wait_for_any 180 "check passes" "checks pass" "Trust and run" "check fails" "checks fail" "raised")
    if [ "$got" = "Trust and run" ]; then
        keys y
        got=$(wait_for_any 180 "check passes" "checks pass" "check fails" "checks fail" "raised")
    fi
    case "$got" in
        "check passes"|"checks pass") echo "exercise $i: pass" ;;
        *) fail "exercise $i did not pass ($got)" ;;
    esac
    if [ "$i" -lt "$N" ]; then
        keys F4                              # next exercise
    fi
done

# Something typed after the last check must survive too. Pasted (all or nothing), and
# again if it did not take: the editor may still be busy with the check's result.
printf '# e2e was here\n' >"$WORK/marker.py"
deadline=$((SECONDS + 60))
until screen | grep -qF -- "# e2e was here"; do
    [ $SECONDS -lt $deadline ] || fail "the editor did not take the typed line"
    type_file "$WORK/marker.py"
    sleep 1
done
keys C-q
wait_for "APP EXITED 0" 60

# ---------------------------------------------------------------- reopen: restored?

T kill-session -t "$SESSION"
start_app
wait_for "press c to continue" 30
last_var="TITLE$N"
keys c
# Continue moves on from the saved position to the next exercise not yet passed: every
# exercise of this lesson passed, so the next lesson's first; the previous one is where we were.
wait_for "Views, strides and copies › 1/" 30   # the lesson screen, not its row on home: it opens in a moment
keys F3
wait_for "$N/$N ${!last_var}" 30              # the position
wait_for "# e2e was here" 30                 # the draft, with what was typed last
keys C-q
wait_for "APP EXITED 0" 60
echo "PASS: finished the tensors lesson from the keyboard; position and draft restored"
