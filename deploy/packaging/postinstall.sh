#!/bin/sh
# After the files are in place. Called by dpkg as `postinst configure
# [OLD_VERSION]` (OLD_VERSION set on an upgrade) and by rpm as `%post N`
# (N = 1 on a first install, 2 or more on an upgrade).
#   first install: enable and start the service;
#   upgrade: restart it if it is running (try-restart), and leave whether it
#   is enabled as the admin left it: a disabled, stopped service stays so.
set -e
upgrade=false
case "$1" in
  configure) [ -n "$2" ] && upgrade=true ;;
  abort-upgrade | abort-remove | abort-deconfigure) exit 0 ;;
  *) [ "$1" -ge 2 ] 2>/dev/null && upgrade=true ;;
esac
# SYSTEMD_RUNTIME_DIR: tests point it at a directory of their own.
if [ -d "${SYSTEMD_RUNTIME_DIR:-/run/systemd/system}" ]; then
  systemctl daemon-reload || true
  if [ "$upgrade" = true ]; then
    systemctl try-restart otelcol-evalbridge.service || true
  else
    systemctl enable otelcol-evalbridge.service || true
    systemctl start otelcol-evalbridge.service || true
  fi
fi
exit 0
