# Sourced by the CLI test scripts that run in their own work folder (file_tests.sh,
# hostile_tests.sh): the failure count and the checks on otc's exit code and stderr. Needs OTC
# and CASE set.
failures=0
fail() {
    echo "FAIL [$CASE]: $*" >&2
    failures=$((failures + 1))
}

# run CODE CMD...: runs otc, stdout/stderr into out and err, and checks the exit code.
run() {
    local want=$1
    shift
    "$OTC" "$@" >out 2>err
    local got=$?
    [ "$got" = "$want" ] || fail "otc $* exited $got, wanted $want; stderr: $(head -c 600 err)"
}
err_has() { grep -qF -- "$1" err || fail "stderr lacks '$1': $(head -c 400 err)"; }
