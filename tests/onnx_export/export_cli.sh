#!/bin/bash
# `otc export` on bad input and at its limits, one case per run: exit 2 with a message naming
# the file or node, and no output file, or an old one untouched, after any failure.
# Usage: export_cli.sh OTC MAKE_EXPORT_MODELS CASE
set -u
OTC=$1 MAKE=$2 CASE=$3
W=$(mktemp -d "${TMPDIR:-/tmp}/otc_export_cli.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; cat "$W/out" "$W/err" 2>/dev/null; exit 1; }
# expect CODE CMD...: run CMD, its output in $W/out and $W/err; fail unless it exits CODE.
expect() {
  local want=$1; shift
  "$@" >"$W/out" 2>"$W/err"
  local got=$?
  [ "$got" = "$want" ] || fail "exit $got, wanted $want: $*"
}
has() { grep -qF -- "$2" "$W/$1" || fail "$1 lacks '$2'"; }
"$MAKE" "$W" || fail "make_export_models"

case $CASE in
usage)
  expect 2 "$OTC" export "$W/neurons.otm" && has err "missing -o FILE.onnx"
  expect 2 "$OTC" export -o "$W/x.onnx" && has err "export"
  expect 2 "$OTC" export "$W/neurons.otm" -o "$W/neurons.otm" && has err "same file"
  expect 0 "$OTC" export --help && has out "usage: otc export MODEL.otm -o MODEL.onnx"
  ;;
bad_models)
  expect 2 "$OTC" export "$W/missing.otm" -o "$W/x.onnx" && has err "missing.otm"
  head -c 100 "$W/neurons.otm" >"$W/cut.otm"
  expect 2 "$OTC" export "$W/cut.otm" -o "$W/x.onnx" && has err "cut.otm"
  printf 'not a model\n' >"$W/text.otm"
  expect 2 "$OTC" export "$W/text.otm" -o "$W/x.onnx" && has err "text.otm"
  expect 2 "$OTC" export "$W" -o "$W/x.onnx"
  [ ! -e "$W/x.onnx" ] || fail "an output was written"
  ;;
refused)
  # a loss output, and a sourceless neuron with no batch to size it by: named, nothing written
  printf 'old' >"$W/old.onnx"
  expect 2 "$OTC" export "$W/loss_output.otm" -o "$W/old.onnx"
  has err "loss_output.otm: onnx export: node 'the_loss' (mse)" && has err "loss"
  [ "$(cat "$W/old.onnx")" = old ] || fail "a refused export changed the old output"
  expect 2 "$OTC" export "$W/unsized.otm" -o "$W/new.onnx" && has err "node 'lonely' (neuron)"
  [ ! -e "$W/new.onnx" ] || fail "a refused export wrote its output"
  ;;
outputs)
  # written atomically (no temporary left), to standard output with '-', never into a folder
  expect 0 "$OTC" export "$W/cnn.otm" -o "$W/cnn.onnx" && has out "wrote $W/cnn.onnx"
  [ -s "$W/cnn.onnx" ] || fail "no cnn.onnx"
  [ "$(ls "$W" | grep -c '\.tmp')" = 0 ] || fail "a temporary file was left: $(ls "$W")"
  expect 0 "$OTC" export "$W/cnn.otm" -o - && cmp -s "$W/out" "$W/cnn.onnx" ||
    fail "standard output differs from the file"
  expect 2 "$OTC" export "$W/cnn.otm" -o "$W/no/such/dir/cnn.onnx" && has err "no/such/dir"
  mkdir "$W/folder.onnx"
  expect 2 "$OTC" export "$W/cnn.otm" -o "$W/folder.onnx" && has err "folder.onnx"
  ;;
huge_values)
  # values of 1 GiB per sample are only shapes in ONNX: exported without allocating them
  expect 0 "$OTC" export "$W/huge_values.otm" -o "$W/h.onnx"
  [ "$(stat -c %s "$W/h.onnx")" -lt 4096 ] || fail "h.onnx is $(stat -c %s "$W/h.onnx") bytes"
  ;;
*) fail "unknown case $CASE" ;;
esac
