#!/usr/bin/env bash
# Every program the build, tests, demo and benchmarks run is installed by install-deps.sh:
# the sources are scanned for the commands they run, and each must come (dpkg -S) from a
# package in install-deps.sh's table or from one of Debian's required packages.
# Usage: tests/external_programs.sh [--scan-out FILE | --scan-in FILE] SRC [TABLE]
# (TABLE: a stand-in for install-deps.sh --list; --scan-out saves the scan of the sources and
# --scan-in reuses it, so a second check of the same tree skips the slow part.)
set -uo pipefail
scan_in='' scan_out=''
while [[ ${1:-} == --scan-* ]]; do
  case $1 in
  --scan-in) scan_in=$2 ;;
  --scan-out) scan_out=$2 ;;
  *) echo "unknown option $1" >&2 && exit 2 ;;
  esac
  shift 2
done
src=$1
cd "$src" || exit 1
if [[ $# -ge 2 ]]; then
  table=$(cat "$2")
else
  table=$(bash scripts/install-deps.sh --list --bench)
fi
# Only Debian's own directories: a program found in /usr/local or ~/.pyenv is not installed
# by any package, and the scripts run Debian's.
debian_path=/usr/sbin:/usr/bin:/sbin:/bin
# Words the scan takes for commands that are not run as programs (message text, fopen modes).
# llvm-config: compiler/CMakeLists.txt's fallback name, unused when llvm-config-19 is found.
not_programs=" caf column ex file free llvm-config more node script sum "
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# The first word of each command in shell text on stdin (after |, &&, ||, ;, $(, `, (, {,
# if/then/do/!, and VAR=value prefixes).
commands() {
  sed -e 's/&&/\n/g; s/||/\n/g; s/\$(/\n/g; s/[|;(){}`]/\n/g' |
    sed -E 's/^[[:space:]]*//; :a; s/^(if|then|do|else|elif|while|until|!|exec|time|command -v|[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*)([[:space:]]+|$)//; ta' |
    grep -oE '^[A-Za-z][A-Za-z0-9_.+-]+'
}
nocomments() { grep -v '^[[:space:]]*#' "$1"; }
# "file word" lines: every command the sources may run.
scan() {
  local f
  for f in scripts/*.sh tests/*.sh tests/cli/*.sh; do
    # It runs on the host (debootstrap, git, chroot) to make the fresh machine.
    [[ $f == scripts/check-fresh-machine.sh ]] && continue
    nocomments "$f" | commands | sed "s|^|$f |"
  done
  for f in CMakeLists.txt */CMakeLists.txt tests/*.cmake tests/*/CMakeLists.txt; do
    [[ -f $f ]] || continue
    nocomments "$f" | grep -oE 'COMMAND[[:space:]]+[A-Za-z][A-Za-z0-9_.+-]*' |
      sed -E "s|COMMAND[[:space:]]+|$f |"
    nocomments "$f" | grep -oE 'find_program\([^)]*\)' |
      sed -E 's/find_program\([A-Z0-9_]+//; s/NAMES//; s/\)//' | tr ' ' '\n' | grep . |
      sed "s|^|$f |"
    nocomments "$f" | grep -oE '"[^"]*"' | commands | sed "s|^|$f |"
  done
  # C runs programs through system() and popen(): the commands are in its string literals.
  grep -lE '\<(system|popen)\(' -r runtime compiler frontend tests examples bench --include='*.c' |
    sort | while read -r f; do
    grep -oE '"([^"\\]|\\.)*"' "$f" | sed 's/^"//; s/"$//' | commands | sed "s|^|$f |"
  done
  # Programs named by their path (/usr/bin/python3).
  grep -oE '(^|[^A-Za-z0-9_./-])/(usr/)?s?bin/[A-Za-z0-9_.+-]+' -r scripts tests bench \
    --include='*.sh' --include='*.c' --include='*.cmake' --include='*.py' |
    sed -E 's|^([^:]*):.*/|\1 |'
}

# The files on the way from PATH to the program: /usr/bin/cc is an alternative pointing at
# /usr/bin/gcc (owned by gcc); with merged /usr, dpkg may know /usr/bin/x as /bin/x.
chain() {
  local p=$1 n=0 t
  while ((n++ < 16)); do
    echo "$p"
    [[ $p == /usr/* ]] && echo "${p#/usr}"
    [[ -L $p ]] || break
    t=$(readlink "$p")
    [[ $t == /* ]] || t=$(dirname "$p")/$t
    p=$t
  done
}
declare -A owner_of # file -> packages owning it (one dpkg-query call for all: it is slow)
load_owners() {
  local line pkgs file
  while IFS= read -r line; do
    [[ $line == diversion* || $line != *": /"* ]] && continue
    pkgs=${line%%: /*} file=/${line#*: /}
    owner_of[$file]="${owner_of[$file]:-} $(echo "$pkgs" | tr ',' ' ' | sed -E 's/:[a-z0-9]+//g')"
  done < <(dpkg-query -S "$@" 2>/dev/null)
}
owners() { # PATH -> the packages owning it or a link on its way, one a line
  local f
  chain "$1" | while read -r f; do printf '%s\n' ${owner_of[$f]:-}; done | grep . | sort -u
}
declare -A base_pkg # Debian's required and essential packages are on every Debian system.
while read -r pkg ess prio; do
  [[ $ess == yes || $prio == required ]] && base_pkg[$pkg]=1
done < <(dpkg-query -W -f='${Package} ${Essential} ${Priority}\n')

declare -A listed # program -> the package the table names for it
while read -r pkg progs; do
  for prog in $progs; do listed[$prog]=$pkg; done
done <<<"$table"

# "word file" for each program the sources run, with the first file that runs it, and where
# each is on this machine.
declare -A path_of
if [[ -n $scan_in ]]; then
  uses=$(<"$scan_in") && [[ -n $uses ]] || fail "no scan in $scan_in"
else
  uses=$(scan | awk '!seen[$2]++ { print $2, $1 }' | sort)
fi
[[ -z $scan_out ]] || printf '%s\n' "$uses" >"$scan_out" || fail "cannot write $scan_out"
# The candidates: the scan's words that are not shell builtins or keywords, and the table's
# programs. All looked up in one subshell (a command substitution per word is most of the
# script's time on a loaded machine).
declare -A shell_word
for w in $(compgen -b) $(compgen -k); do shell_word[$w]=1; done
words=("${!listed[@]}")
while read -r word file; do
  [[ $not_programs == *" $word "* || -n ${shell_word[$word]:-} ]] || words+=("$word")
done <<<"$uses"
while read -r word path; do
  [[ -n $path ]] && path_of[$word]=$path
done < <(
  PATH=$debian_path
  for w in "${words[@]}"; do
    printf '%s ' "$w"
    type -P "$w" || echo
  done
)
mapfile -t files < <(for w in "${!path_of[@]}"; do chain "${path_of[$w]}"; done | sort -u)
load_owners "${files[@]}"

# (a) Each listed program is installed, from the package the table names.
for prog in "${!listed[@]}"; do
  pkg=${listed[$prog]}
  path=${path_of[$prog]:-}
  if [[ -z $path ]]; then
    fail "$prog is not installed (package $pkg): run scripts/install-deps.sh"
    continue
  fi
  owners "$path" | grep -qxF "$pkg" ||
    fail "$prog ($path) is not from $pkg but from: $(owners "$path" | tr '\n' ' ')"
done

# (b) Each program the sources run is listed, or comes from a required package.
checked=0
while read -r word file; do
  path=${path_of[$word]:-}
  [[ -n $path ]] || continue # not a command, or not a program on this machine
  checked=$((checked + 1))
  [[ -n ${listed[$word]:-} ]] && continue
  pkgs=$(owners "$path" | paste -sd " ")
  ok=0
  for p in $pkgs; do [[ -n ${base_pkg[$p]:-} ]] && ok=1; done
  [[ $ok -eq 1 ]] && continue
  fail "$file runs $word ($path, package ${pkgs:-none}), which is not in scripts/install-deps.sh's" \
    "table: add its package with the program (or, if the word is not a command, to not_programs)"
done <<<"$uses"

[[ $checked -gt 0 ]] || fail "the scan found no programs at all"
[[ $failed -eq 0 ]] &&
  echo "ok: ${#listed[@]} listed programs installed; $checked programs the sources run checked"
exit $failed
