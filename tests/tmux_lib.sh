# Shared by the tmux scripts (source it after setting WORK, SOCKET and SESSION): a private
# tmux server, the screen as text, and waits that poll the screen with a deadline, so that
# nothing sleeps a fixed time to make a test pass.

T() { tmux -L "$SOCKET" "$@"; }

cleanup() {
    T kill-server 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    echo "----- screen -----" >&2
    T capture-pane -p -t "$SESSION" >&2 2>/dev/null || true
    exit 1
}

screen() { T capture-pane -p -t "$SESSION" 2>/dev/null || true; }

keys() { T send-keys -t "$SESSION" "$@"; }

# wait_for TEXT [SECONDS]: poll the screen until TEXT (a fixed string) is on it.
wait_for() {
    local text=$1 limit=${2:-60}
    local deadline=$((SECONDS + limit))
    until screen | grep -qF -- "$text"; do
        [ $SECONDS -lt $deadline ] || fail "waited ${limit}s for: $text"
        sleep 0.2
    done
}

# wait_for_any SECONDS TEXT...: the first of several texts that appears; prints it.
wait_for_any() {
    local limit=$1; shift
    local deadline=$((SECONDS + limit)) shot t
    while :; do
        shot=$(screen)
        for t in "$@"; do
            if grep -qF -- "$t" <<<"$shot"; then echo "$t"; return 0; fi
        done
        [ $SECONDS -lt $deadline ] || fail "waited ${limit}s for any of: $*"
        sleep 0.2
    done
}
