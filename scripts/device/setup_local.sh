#!/usr/bin/env bash
# Here (no GPU), once per checkout: the ignored .device/ and .bundle/ that every device call
# carries (`carry: [".bundle", ".device"]`), from the team's recipe in ../shared/device, with the
# two edits this repo needs, then the 64-MiB check of what travels. About 3-5 minutes (xz -9e).
#   bash scripts/device/setup_local.sh           # copy, edit, build, check
#   bash scripts/device/setup_local.sh --check   # only the check (after adding results, say)
# The edits (sessions 31 and 44): pack at `xz -T2 -9e` (the recipe's `-6` makes 57.0 MB) and drop
# jedi's typeshed stubs before packing (read only by IPython's completion; 52.9 MB in all): with
# the ~12.6 MB of tracked files the recipe's bundle passes the limit on what a call may carry.
# Session 47 drops SGLang's diffusion runtime too (sglang/multimodal_gen, 1.3 MB packed): only
# its `sglang generate` CLI and diffusion kernels import it, never the server under sglang/srt.
# Session 49 drops DeepGEMM's CUTLASS/CuTe headers (include/cute, include/cutlass: read only when
# it JIT-compiles an FP8 kernel; our pairs are bf16; its import hashes include/deep_gemm, kept)
# and third-party test folders (flashinfer's cutlass/cccl, jsonschema, dill, referencing):
# 1.1 MB packed, the room the results of a session need. Session 50 drops CUTLASS's examples
# under flashinfer/data (5.1 MB unpacked; flashinfer's JIT reads cutlass/include and tools only)
# and jedi with parso (IPython 9.15 imports jedi for completion only, in a try / except
# ImportError; SGLang imports IPython.display at module level, never a completer).
# Session 52 strips the debug info from the shared objects (`strip --strip-debug`: symbols for a
# debugger, never read at run time): xgrammar's bindings (53 MB, 2.9 MB stripped) and zstandard's
# C backend held it, ~10 MB packed. The check counts what a call really sends: a tar of the tree,
# each file with its 512-B header and padding to 512 B (session 52: a tree 0.60 MB under the
# limit by bytes alone was refused), untracked files git does not ignore included (they travel).
# ADAPTIVE_SPEC_SHARED_DEVICE: another recipe folder; ADAPTIVE_SPEC_NO_BUILD=1: the copy and the
# edits only.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED=${ADAPTIVE_SPEC_SHARED_DEVICE:-$REPO/../shared/device}
LIMIT=$((64 * 1024 * 1024))
fail() { echo "error: $*" >&2; exit 2; }
tar_bytes() { awk '{s += 512 + 512 * int(($1 + 511) / 512)} END {print s + 0}'; }
check_size() {
  [ -f "$REPO/.bundle/sglang-site.tar.xz" ] || fail "no .bundle/sglang-site.tar.xz: run this script without --check"
  local tracked carried total
  # bytes in 512-B tar blocks, one more for each file's header
  # the tree: tracked files and untracked ones git does not ignore (both travel), less the
  # carried folders, counted below
  tracked=$(cd "$REPO" && git ls-files -z --cached --others --exclude-standard -- . \
    ':!.bundle' ':!.device' | xargs -0 stat -c %s | tar_bytes)
  carried=$(cd "$REPO" && find .bundle .device -type f -print0 | xargs -0 stat -c %s | tar_bytes)
  total=$((tracked + carried))
  echo "travels (as tar blocks): $tracked B in the tree + $carried B carried = $total B of $LIMIT" \
    "($((LIMIT - total)) B left)"
  [ "$total" -le "$LIMIT" ] || fail "over the 64-MiB limit by $((total - LIMIT)) B: trim the tracked tree or the bundle"
}
case "${1:-}" in
  --check) check_size; exit 0 ;;
  "") ;;
  *) fail "unknown argument '$1' (none, or --check)" ;;
esac
[ -f "$SHARED/make_bundle.sh" ] || fail "no device recipe at $SHARED (make_bundle.sh missing)"
rm -rf "$REPO/.device"; mkdir -p "$REPO/.device"
cp -r "$SHARED"/. "$REPO/.device/"; chmod -R u+w "$REPO/.device"
MB="$REPO/.device/make_bundle.sh"
command -v strip > /dev/null || fail "no 'strip' here (binutils): it strips the bundle's .so files"
grep -q 'xz -T0 -6 >' "$MB" && grep -q '^rm -f "$OUTDIR/sglang-site.tar.xz"' "$MB" \
  || fail "$SHARED/make_bundle.sh changed: its xz line or its 'rm -f' before packing is not the one this script edits"
sed -i -e 's/xz -T0 -6 >/xz -T2 -9e >/' \
  -e 's|^rm -f "$OUTDIR/sglang-site.tar.xz"|rm -rf "$STAGE/site/jedi/third_party"  # session 44\n'\
'rm -rf "$STAGE/site/sglang/multimodal_gen"  # session 47\n'\
'for d in deep_gemm/include/cute deep_gemm/include/cutlass flashinfer/data/cutlass/test \\\n'\
'  flashinfer/data/cccl/libcudacxx/test flashinfer/data/cccl/python/cuda_cccl/tests \\\n'\
'  jsonschema/tests dill/tests referencing/tests; do rm -rf "$STAGE/site/$d"; done  # session 49\n'\
'rm -rf "$STAGE/site/flashinfer/data/cutlass/examples" "$STAGE/site"/jedi* "$STAGE/site"/parso*'\
'  # session 50\n'\
'find "$STAGE/site" -name "*.so*" -type f -exec strip --strip-debug {} +  # session 52\n&|' \
  "$MB"
echo "recipe copied to .device/ and edited (xz -T2 -9e, no jedi stubs, no diffusion runtime,"\
  "no DeepGEMM JIT headers, no third-party tests, no CUTLASS examples, no jedi, stripped .so)"
[ "${ADAPTIVE_SPEC_NO_BUILD:-0}" = 1 ] && exit 0
(cd "$REPO" && REPO="$REPO" bash "$MB")
check_size
