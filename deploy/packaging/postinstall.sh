#!/bin/sh
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable otelcol-evalbridge.service
  systemctl restart otelcol-evalbridge.service || true
fi
