#!/usr/bin/env bash
# The cart-pole environment of docs/neat.md (examples/exec/): its physics against the classic
# equations worked by hand, and the shipped config evolving a controller through the exec
# protocol that balances a whole episode. Usage: exec_cartpole.sh OTC SOURCE_DIR
set -u
OTC=$1 SRC=$2
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/otc_exec_cartpole.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# From rest, upright, pushed by +10 N: total mass 1.1 kg, so temp = 10/1.1 = 9.0909;
# theta'' = -temp / (0.5 (4/3 - 0.1/1.1)) = -14.6341 rad/s^2;
# x'' = temp - 0.1 * 0.5 * theta'' / 1.1 = 9.7561 m/s^2 (by hand).
PYTHONPATH="$SRC/examples/exec" python3 -c '
import cartpole_env as c
xa, ta = c.accelerations(0.0, 0.0, 10.0)
assert abs(xa - 9.7561) < 1e-4 and abs(ta + 14.6341) < 1e-4, (xa, ta)
' || fail "cart-pole accelerations differ from the hand-worked values"

# The protocol by hand: one reset, one step; the observation has 4 numbers and reward 1.
printf 'reset 7\nact 1\n' | python3 "$SRC/examples/exec/cartpole_env.py" >"$WORK/talk" ||
    fail "the environment failed on reset/act"
awk 'NR == 1 && ($1 != "obs" || NF != 5) { exit 1 }
     NR == 2 && ($1 != "step" || $2 != 1 || $3 != 0 || NF != 7) { exit 1 }' "$WORK/talk" ||
    fail "unexpected protocol lines: $(cat "$WORK/talk")"

"$OTC" evolve "$SRC/examples/exec/cartpole.ini" \
    --task "exec:python3 $SRC/examples/exec/cartpole_env.py" --seed 1 --threads 2 \
    --out "$WORK/cartpole.otm" >"$WORK/out" 2>"$WORK/err" ||
    fail "otc evolve exited $?: $(head -c 600 "$WORK/err")"
grep -q "solved after .* champion fitness 500," "$WORK/out" ||
    fail "the champion did not balance a whole episode: $(cat "$WORK/out")"
[ -s "$WORK/cartpole.otm" ] || fail "no champion saved"
echo "exec_cartpole: ok"
