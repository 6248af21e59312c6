#!/usr/bin/env bash
# Runs the README's two commands, scripts/demo.sh then scripts/test.sh, on a fresh Debian 12:
# a debootstrap minbase root that has only what Debian requires, into which this checkout's
# HEAD is cloned, so nothing installed by hand on this machine can hide a missing package.
# Usage (as root): scripts/check-fresh-machine.sh [--quick] [--keep] [ROOT]
#   ROOT     the pristine root, made once and never changed (default /var/tmp/otc-fresh-root);
#            each run works in a copy, ROOT-run, made afresh
#   --quick  passes --quick to scripts/test.sh (no sanitizer pass)
#   --keep   reuses ROOT-run with the packages an earlier run installed (faster, not fresh)
# Logs and timings go to ROOT-run/root/*.log and are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
quick="" keep=0 root=/var/tmp/otc-fresh-root
for arg in "$@"; do
  case $arg in
    --quick) quick=--quick ;;
    --keep) keep=1 ;;
    -*) echo "usage: $0 [--quick] [--keep] [ROOT]" >&2; exit 2 ;;
    *) root=$arg ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
mirror=http://deb.debian.org/debian
run=$root-run

if [[ ! -x $root/bin/bash ]]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  echo "== debootstrap --variant=minbase bookworm $root"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
fi

mounts=(proc sys dev dev/pts)
unmount() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    mountpoint -q "$run/${mounts[i]}" && umount -l "$run/${mounts[i]}"
  done
  return 0
}
trap unmount EXIT
if [[ $keep -eq 0 || ! -d $run ]]; then
  unmount
  rm -rf --one-file-system "$run"
  cp -a "$root" "$run"
fi
cp /etc/resolv.conf "$run/etc/resolv.conf"
for m in "${mounts[@]}"; do mount --bind "/$m" "$run/$m"; done

# The checkout's committed HEAD, as a user who cloned the repository would have it.
rm -rf "$run/root/otc"
git clone -q "$src" "$run/root/otc"
git -C "$run/root/otc" checkout -q --detach "$(git rev-parse HEAD)"
echo "== $(git log -1 --format='%h %s' | cut -c1-80)"

status=0
step() { # name command...: runs in the chroot, logs to /root/NAME.log, records the time
  local name=$1; shift
  local t0=$SECONDS rc=0
  echo "== $* (log: $run/root/$name.log)"
  env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$run" /bin/bash -c "cd /root/otc && $*" >"$run/root/$name.log" 2>&1 || rc=$?
  printf '%s: exit %d after %d s\n' "$name" "$rc" $((SECONDS - t0)) | tee -a "$run/root/times.log"
  [[ $rc -eq 0 ]] || { tail -30 "$run/root/$name.log"; status=1; }
}
: >"$run/root/times.log"
step demo bash scripts/demo.sh
step test bash scripts/test.sh $quick
exit $status
