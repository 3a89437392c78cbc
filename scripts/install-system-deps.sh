#!/usr/bin/env bash
# Installs the Debian packages listed in build/apt-packages.txt that are missing.
# Idempotent: with everything installed it runs no apt command at all.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
list="$here/build/apt-packages.txt"
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: missing Debian packages: ${missing[*]}; run as root or install them with apt-get." >&2
  exit 1
fi
echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
