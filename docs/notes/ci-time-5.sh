#!/bin/bash
# Round 5 of docs/notes/ci-time.md: one pytest run of FILES in ROOT, with its wall and CPU seconds (user + system,
# the compiler's children included), which stay comparable on a loaded machine where wall times do not.
# usage: ci-time-5.sh ROOT LABEL FILES...   (before: `git archive cba7fa3 | tar -x -C /tmp/before`)
root=$1; label=$2; shift 2
cd "$root" || exit 1
times=$(mktemp)
/usr/bin/time -o "$times" -f "wall %e cpu-user %U cpu-sys %S" env AUTOSPARSE_CACHE_DIR="/tmp/cache-ci5-$label" \
    PYTHONPATH="$root/src:$root/bench" python -m pytest -q -p no:cacheprovider "$@" > "/tmp/ci5-$label.log" 2>&1
echo "$label | $* | $(cat "$times") | $(grep -E '(passed|failed)' "/tmp/ci5-$label.log" | tail -1)"
rm -f "$times"
