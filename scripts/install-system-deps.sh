#!/usr/bin/env bash
# Installs the Debian packages listed in build/apt-packages.txt that are missing (what `make test` needs), as root or
# with passwordless sudo (scripts/apt-install.sh); otherwise it stops with the command to run.
# Idempotent: with everything installed it runs no apt command at all.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
list="$here/build/apt-packages.txt"
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
exec bash "$here/scripts/apt-install.sh" "make test" "the tests" "${wanted[@]}"
