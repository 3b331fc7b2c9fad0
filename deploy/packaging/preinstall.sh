#!/bin/sh
# The service's system user.
if ! getent group otelcol-evalbridge >/dev/null 2>&1; then
  groupadd --system otelcol-evalbridge
fi
if ! getent passwd otelcol-evalbridge >/dev/null 2>&1; then
  useradd --system --gid otelcol-evalbridge --no-create-home --home-dir /var/lib/otelcol-evalbridge \
    --shell /usr/sbin/nologin --comment "otelcol-evalbridge" otelcol-evalbridge
fi
