#!/usr/bin/env bash
# Fold $OUT into few files: at most 8 come back from the GPU machine (session 9 lost 8 result
# files to that cap). Everything but run.log and the log tarballs goes into results-$1.tar.xz.
# Usage, at the end of a device command: bash scripts/device/pack_out.sh NAME
set -u
name=${1:-call}
cd "$OUT" || exit 2
files=$(ls -A | grep -v -e '^run\.log$' -e '^logs-.*\.tar\.xz$' -e '^results-.*\.tar\.xz$')
[ -n "$files" ] || exit 0
tar cJf "results-$name.tar.xz" --remove-files $files && echo "packed $(echo "$files" | wc -l) files into results-$name.tar.xz"
