#!/bin/bash
# The man page generated from --help lists every subcommand `otc --help` prints and, in that
# subcommand's section, every option `otc CMD --help` prints; it renders without warnings; its
# EXAMPLES run only subcommands --help lists.
# Usage: man_page_test.sh OTC MAN_PAGE
set -u
OTC=$1 PAGE=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -s "$PAGE" ] || fail "no man page at $PAGE"
command -v groff >/dev/null || fail "groff not installed (scripts/install-deps.sh installs groff-base)"
text=$(groff -man -Tascii -ww -P-cbou "$PAGE" 2>/tmp/man_page_test.$$) ||
  fail "groff failed: $(cat /tmp/man_page_test.$$)"
warnings=$(cat /tmp/man_page_test.$$); rm -f /tmp/man_page_test.$$
[ -z "$warnings" ] || fail "groff warnings: $warnings"
command -v man >/dev/null || fail "man not installed (scripts/install-deps.sh installs man-db)"
MANWIDTH=80 man -l "$PAGE" >/dev/null 2>&1 || fail "man -l $PAGE failed"

commands=$("$OTC" --help | sed -n '/^commands:/,/^$/s/^  \([a-z0-9_]\{1,\}\) .*/\1/p')
[ -n "$commands" ] || fail "otc --help lists no commands"
n=0
for cmd in $commands; do
  # The command's section: from its heading to the next heading.
  section=$(printf '%s\n' "$text" | awk -v h="OTC $cmd" '$0 == h {on = 1; next} /^[A-Z]/ {on = 0} on')
  [ -n "$section" ] || fail "no section 'OTC $cmd' in the man page"
  synopsis=$("$OTC" "$cmd" --help | sed -n 's/^usage: //p')
  printf '%s\n' "$section" | tr -s ' \n' ' ' | grep -qF -- "$synopsis" ||
    fail "$cmd: synopsis '$synopsis' missing"
  for opt in $("$OTC" "$cmd" --help | sed -n 's/^  \(-[^ ]*\).*/\1/p' | tr ',' ' '); do
    printf '%s\n' "$section" | grep -qE -- "(^|[ ,])$opt([ ,]|$)" ||
      fail "$cmd: option $opt missing from the man page"
    n=$((n + 1))
  done
done
# EXAMPLES: present, and every example runs a subcommand `otc --help` lists.
examples=$(printf '%s\n' "$text" | awk '$0 == "EXAMPLES" {on = 1; next} /^[A-Z]/ {on = 0} on')
used=$(printf '%s\n' "$examples" | sed -n 's/^ *otc \([a-z0-9_]\{1,\}\) .*/\1/p')
[ -n "$used" ] || fail "no EXAMPLES section with otc commands"
for cmd in $used; do
  printf '%s\n' $commands | grep -qx -- "$cmd" || fail "EXAMPLES runs 'otc $cmd', which --help does not list"
done
echo "man page: $(echo $commands | wc -w) commands, $n options, all present; $(echo $used | wc -w) examples"
