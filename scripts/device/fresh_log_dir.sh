#!/usr/bin/env bash
# Usage: fresh_log_dir.sh DIR CALL
# Empties DIR of what an earlier device call left there, once per call (CALL: an id the call's
# scripts share, common.sh's T_START): the servers append to their logs, and on a machine still
# warm from the last call a sweep of the same name read that call's lines as its own (session 49,
# 50: a second `fs` call's sample log held both runs' rows, stripped by hand by timestamp).
# A second sweep of the same name within one call keeps the first's lines, as before.
set -u
dir=${1:?DIR}; call=${2:?CALL}
mark="$dir/.device-call"
if [ -d "$dir" ] && [ "$(cat "$mark" 2>/dev/null)" != "$call" ]; then
  rm -rf "$dir"
fi
mkdir -p "$dir" && echo "$call" > "$mark"
