#!/bin/sh
# Before the files go. Called by dpkg as `prerm remove` (or `prerm upgrade
# NEW_VERSION`, `deconfigure`, `failed-upgrade`) and by rpm as `%preun N`
# (N = 0 on removal, 1 or more when an upgrade removes the old package).
# Only a removal stops and disables the service; an upgrade leaves it as it
# is (the new package's post-install restarts it if it runs).
set -e
remove=false
case "$1" in
  remove) remove=true ;;
  0) remove=true ;;
esac
if [ "$remove" = true ] && [ -d "${SYSTEMD_RUNTIME_DIR:-/run/systemd/system}" ]; then
  systemctl stop otelcol-evalbridge.service || true
  systemctl disable otelcol-evalbridge.service || true
fi
exit 0
