#!/bin/sh
# After the files are gone (dpkg `postrm remove|purge|upgrade …`, rpm
# `%postun N`): systemd forgets the removed unit file.
set -e
if [ -d "${SYSTEMD_RUNTIME_DIR:-/run/systemd/system}" ]; then
  systemctl daemon-reload || true
fi
exit 0
