#!/usr/bin/env bash
# docs/commands.md keeps step with --help: a section '## otc CMD' for every subcommand
# `otc --help` lists, holding that command's usage line and every option `otc CMD --help` prints.
# Usage: docs_commands.sh OTC SOURCE_DIR
set -u
OTC=$1 PAGE=$2/docs/commands.md
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -s "$PAGE" ] || fail "no $PAGE"
commands=$("$OTC" --help | sed -n '/^commands:/,/^$/s/^  \([a-z0-9_]\{1,\}\) .*/\1/p')
[ -n "$commands" ] || fail "otc --help lists no commands"
n=0
for cmd in $commands; do
  section=$(awk -v h="## otc $cmd" '$0 == h {on = 1; next} /^## / {on = 0} on' "$PAGE")
  [ -n "$section" ] || fail "docs/commands.md has no section '## otc $cmd'"
  usage=$("$OTC" "$cmd" --help | sed -n 's/^usage: //p')
  printf '%s\n' "$section" | grep -qF -- "$usage" || fail "$cmd: usage '$usage' not in its section"
  for opt in $("$OTC" "$cmd" --help | sed -n 's/^  \(-[^ ]*\).*/\1/p' | tr ',' ' '); do
    printf '%s\n' "$section" | grep -qE -- "(^|[^a-z-])$opt([^a-z-]|$)" ||
      fail "$cmd: option $opt not in docs/commands.md"
    n=$((n + 1))
  done
done
echo "docs/commands.md: $(echo $commands | wc -w) commands, $n options, all present"
