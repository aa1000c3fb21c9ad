#!/usr/bin/env bash
# The recall quiz in a real terminal: on a fresh data dir no lesson was opened, so home and
# the quiz say new cards come from the lessons you open and the quiz has nothing to ask; `a`
# adds the views-strides lesson's cards; every card is then answered right from the keyboard:
# the stride as `3, 1` (accepted, the key's form shown), predict cards from their keys, the
# choice card by the number it shows (after leaving and reopening the quiz: the same order),
# the cloze card whose blanks show as [1]____ and [2]____.
#
# Usage: tests/tmux_recall.sh [COLUMNS ROWS]     (default 120 40; uses the ptfund-tutor on PATH)
# Every wait polls the screen with a deadline; nothing sleeps a fixed time to make it work.
set -euo pipefail

COLS=${1:-120}
ROWS=${2:-40}
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptfund-recall.XXXXXX")
DATA="$WORK/data"
SOCKET="ptfund-recall-$$"   # a private tmux server: never touches the user's sessions
SESSION=tutor
. "$(dirname "$0")/tmux_lib.sh"

# options: a choice card's numbered options as shown, once they are on the screen.
options() {
    local deadline=$((SECONDS + 10)) shown
    until shown=$(screen | grep -E '^ +[0-9]\. ') && [ -n "$shown" ]; do
        [ $SECONDS -lt $deadline ] || fail "no numbered options on the screen"
        sleep 0.2
    done
    echo "$shown"
}

# The lesson's cards in order, each as TYPE<tab>ANSWER (a predict card's key on one line:
# answers are compared with whitespace collapsed).
"$PYTHON" - >"$WORK/plan" <<'EOF'
from tutor.packs.catalog import Catalog
from tutor.grading.cards import cloze_blanks
lesson = next(les for _, les in Catalog.load().lessons() if les.id == "views-strides")
for card in lesson.cards:
    if card.type == "short":
        answer = "3, 1" if card.id == "fresh-strides" else card.answers[0]
    elif card.type == "predict":
        answer = " ".join(card.expected.split())
    elif card.type == "choice":
        answer = next(o.text for o in card.options if o.correct)
    elif card.type == "numeric":
        answer = f"{card.answer:g}"
    else:
        answer = "; ".join(alts[0] for alts in cloze_blanks(card))
    print(f"{card.type}\t{answer}")
EOF
total=$(wc -l <"$WORK/plan")

T new-session -d -s "$SESSION" -x "$COLS" -y "$ROWS" \
    "ptfund-tutor --data-dir '$DATA'; echo \"APP EXITED \$?\"; sleep 600"
wait_for "Lessons" 30
wait_for "No cards yet." 30
wait_for "New cards come from" 10
keys r
wait_for "No recall cards are due." 30
wait_for "New cards come from the lessons you open" 10
keys Escape
wait_for "No cards yet." 10
keys Down                                    # views-strides, the second lesson
keys a
wait_for "cards join the recall" 10               # the toast (wrapped as it fits)
wait_for "New cards come from Views" 10
wait_for "kernel ready" 180                  # predict cards run their code in it
keys r

n=0
of=$total
resumed=0
while IFS=$'\t' read -r type answer; do
    n=$((n + 1))
    wait_for "card $n of $of" 30
    if [ "$type" = choice ] && [ $resumed -eq 0 ]; then
        # leave before answering and come back: the options keep their order
        before=$(options)
        keys Escape
        wait_for "New cards come from Views" 10
        keys r
        of=$((total - n + 1))
        n=1
        wait_for "card 1 of $of" 30
        after=$(options)
        [ "$before" = "$after" ] || fail "the options moved when the quiz was reopened: $before / $after"
        resumed=1
        # the right option by the number it shows
        answer=$(grep -F -- "${answer//\`/}" <<<"$after" | sed -E 's/^ +([0-9])\..*/\1/' || true)
        [ -n "$answer" ] || fail "the right option is not on the screen"
        echo "choice: the right option shows as $answer, in the same order after reopening"
    fi
    if [ "$type" = cloze ]; then
        wait_for "[1]____" 10
        wait_for "[2]____" 10
    fi
    keys -l -- "$answer"
    keys Enter
    wait_for "enter: next card" 120          # the answer box, once graded
    # The verdict above the box may paint a frame after the box: wait for it, then read it.
    verdict=$(wait_for_any 10 "Correct." "Wrong.")
    [ "$verdict" = "Correct." ] || fail "card $n ($type) answered $answer was not right"
    if [ "$answer" = "3, 1" ]; then
        wait_for "Usually written: (3, 1)" 5
    fi
    echo "card $n ($type): right"
    keys Enter
done <"$WORK/plan"

wait_for "That was the last card due." 30
keys C-q
wait_for "APP EXITED 0" 60
echo "PASS: recall at ${COLS}x${ROWS}: new cards only from the added lesson, shuffled options kept on reopening, 3, 1 accepted, blanks shown"
