#!/bin/sh
if [ -d /run/systemd/system ]; then
  systemctl stop otelcol-evalbridge.service || true
  systemctl disable otelcol-evalbridge.service || true
fi
