#!/usr/bin/env bash
# Tests the maintainer scripts of the built packages as dpkg and rpm run them
# (docs/deploy.md, contract §22), against a stand-in systemctl that keeps the
# service's state (enabled, active, restarts) in files:
#   install                      -> enabled and running
#   upgrade of an enabled, running service   -> still enabled, running, restarted
#   upgrade of a disabled, stopped service   -> still disabled and stopped
#   remove                       -> stopped and disabled
# For the deb, each case's scripts are the package's own, called in dpkg's
# order with dpkg's arguments, and then the deb is installed, reinstalled
# (an upgrade) and removed by dpkg itself into a scratch root
# (--root, --force-script-chrootless). For the rpm, its %post, %preun and
# %postun (rpm -qp --scripts) are called in rpm's upgrade order (new %post,
# old %preun, old %postun).
#
#   deploy/packaging/scripts_test.sh PACKAGE.deb PACKAGE.rpm
set -euo pipefail
deb=$1
rpm=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "scripts_test: $*" >&2; exit 1; }

# The stand-in systemctl; SYSTEMD_RUNTIME_DIR makes the scripts see systemd.
mkdir -p "$tmp/bin" "$tmp/systemd"
cat >"$tmp/bin/systemctl" <<'EOF'
#!/bin/sh
st=$FAKE_SYSTEMD_STATE
echo "$*" >>"$st/calls"
case "$1" in
  enable) touch "$st/enabled" ;;
  disable) rm -f "$st/enabled" ;;
  start) touch "$st/active" ;;
  stop) rm -f "$st/active" ;;
  restart) touch "$st/active"; echo restart >>"$st/restarts" ;;
  try-restart) if [ -f "$st/active" ]; then echo restart >>"$st/restarts"; fi ;;
esac
exit 0
EOF
# The service user exists already: preinst creates nothing on this machine.
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/getent"
chmod +x "$tmp/bin/systemctl" "$tmp/bin/getent"
export SYSTEMD_RUNTIME_DIR="$tmp/systemd" PATH="$tmp/bin:$PATH"

state() { # enabled|disabled running|stopped restarts
  local st=$FAKE_SYSTEMD_STATE
  echo "$([[ -f $st/enabled ]] && echo enabled || echo disabled) $([[ -f $st/active ]] && echo running || echo stopped) restarts=$(cat "$st/restarts" 2>/dev/null | wc -l)"
}
# run_case NAME INITIAL WANT SCRIPT ARGS [; SCRIPT ARGS ...]
run_case() {
  local name=$1 initial=$2 want=$3
  shift 3
  export FAKE_SYSTEMD_STATE="$tmp/state-$RANDOM$RANDOM"
  mkdir -p "$FAKE_SYSTEMD_STATE"
  [[ $initial == *enabled* && $initial != *disabled* ]] && touch "$FAKE_SYSTEMD_STATE/enabled"
  [[ $initial == *running* ]] && touch "$FAKE_SYSTEMD_STATE/active"
  local call=()
  for a in "$@" ";"; do
    if [[ $a == ";" ]]; then
      sh "${call[@]}" || fail "$name: ${call[*]} failed"
      call=()
    else
      call+=("$a")
    fi
  done
  local got
  got=$(state)
  printf '  %-52s %-18s -> %-30s (systemctl: %s)\n' "$name" "$initial" "$got" "$(paste -sd, "$FAKE_SYSTEMD_STATE/calls" 2>/dev/null)"
  [[ $got == "$want" ]] || fail "$name: got '$got', want '$want'"
}

echo "deb $(basename "$deb"): $(dpkg-deb -f "$deb" Package Version Section Priority | paste -sd' ')"
[[ -n $(dpkg-deb -f "$deb" Section) ]] || fail "the deb has no Section"
d="$tmp/deb"
dpkg-deb -e "$deb" "$d"
for s in preinst postinst prerm postrm; do [[ -x $d/$s ]] || fail "the deb has no $s"; done
run_case "deb install" "disabled stopped" "enabled running restarts=0" \
  "$d/preinst" install ";" "$d/postinst" configure ""
run_case "deb upgrade, enabled and running" "enabled running" "enabled running restarts=1" \
  "$d/prerm" upgrade 9.9.9 ";" "$d/preinst" upgrade 0.0.1 ";" "$d/postrm" upgrade 9.9.9 ";" "$d/postinst" configure 0.0.1
run_case "deb upgrade, disabled and stopped" "disabled stopped" "disabled stopped restarts=0" \
  "$d/prerm" upgrade 9.9.9 ";" "$d/preinst" upgrade 0.0.1 ";" "$d/postrm" upgrade 9.9.9 ";" "$d/postinst" configure 0.0.1
run_case "deb upgrade, enabled but stopped" "enabled stopped" "enabled stopped restarts=0" \
  "$d/prerm" upgrade 9.9.9 ";" "$d/postinst" configure 0.0.1
run_case "deb remove" "enabled running" "disabled stopped restarts=0" \
  "$d/prerm" remove ";" "$d/postrm" remove

if command -v rpm >/dev/null 2>&1; then
  r="$tmp/rpm"
  mkdir -p "$r"
  for tag in PREIN POSTIN PREUN POSTUN; do
    rpm -qp --qf "%{$tag}" "$rpm" >"$r/$tag" 2>/dev/null
    [[ -s $r/$tag && $(cat "$r/$tag") != "(none)" ]] || fail "the rpm has no $tag scriptlet"
  done
  echo "rpm $(basename "$rpm"): $(rpm -qp --qf '%{NAME} %{VERSION} %{GROUP}' "$rpm" 2>/dev/null)"
  run_case "rpm install" "disabled stopped" "enabled running restarts=0" \
    "$r/PREIN" 1 ";" "$r/POSTIN" 1
  run_case "rpm upgrade, enabled and running" "enabled running" "enabled running restarts=1" \
    "$r/PREIN" 2 ";" "$r/POSTIN" 2 ";" "$r/PREUN" 1 ";" "$r/POSTUN" 1
  run_case "rpm upgrade, disabled and stopped" "disabled stopped" "disabled stopped restarts=0" \
    "$r/PREIN" 2 ";" "$r/POSTIN" 2 ";" "$r/PREUN" 1 ";" "$r/POSTUN" 1
  run_case "rpm remove" "enabled running" "disabled stopped restarts=0" \
    "$r/PREUN" 0 ";" "$r/POSTUN" 0
else
  fail "no rpm command (apt-get install rpm): the rpm's scriptlets cannot be read"
fi

# dpkg itself: install, reinstall (an upgrade: prerm upgrade, postinst
# configure OLD) and remove, into a scratch root.
root="$tmp/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
export FAKE_SYSTEMD_STATE="$tmp/state-dpkg"
mkdir -p "$FAKE_SYSTEMD_STATE"
dpkg_root() { dpkg --root="$root" --force-script-chrootless --force-not-root --force-bad-path --log=/dev/null "$@"; }
dpkg_root -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i failed"; }
[[ -x $root/usr/bin/otelcol-evalbridge && -f $root/etc/otelcol-evalbridge/config.yaml ]] || fail "dpkg -i: files missing"
[[ $(state) == "enabled running restarts=0" ]] || fail "dpkg -i: $(state)"
echo "  dpkg -i (scratch root)                                -> $(state)"
dpkg_root -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i (again) failed"; }
[[ $(state) == "enabled running restarts=1" ]] || fail "dpkg -i again (an upgrade): $(state)"
echo "  dpkg -i again (an upgrade)                            -> $(state)"
dpkg_root -r otelcol-evalbridge >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -r failed"; }
[[ ! -e $root/usr/bin/otelcol-evalbridge ]] || fail "dpkg -r left the binary"
[[ -f $root/etc/otelcol-evalbridge/config.yaml ]] || fail "dpkg -r removed the conffile (only purge does)"
[[ $(state) == "disabled stopped restarts=1" ]] || fail "dpkg -r: $(state)"
echo "  dpkg -r                                               -> $(state)"
echo "scripts_test: ok"
