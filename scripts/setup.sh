#!/usr/bin/env bash
# Install what the tests need on a fresh machine: Debian packages for the serial and firmware
# rigs (socat pty pairs, avr-gcc for the buzz-box firmware, simavr to run it), ffmpeg (act's
# frames.video, and ffprobe for its tests) and the npm packages. Idempotent: installs only what
# is missing. Needs root (or sudo) for apt-get. rt-tests: cyclictest, the latency benches'
# reference for the machine's own wake-up latency.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(socat make gcc gcc-avr avr-libc simavr libsimavr-dev libelf-dev libgl1 udev bubblewrap chromium fonts-dejavu-core redis-server iproute2 ffmpeg rt-tests)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi
