#!/usr/bin/env bash
# apt-install.sh WHO WHY PACKAGE...: installs the Debian packages given that are missing, for WHO (the command to
# name in messages, e.g. "make book") because of WHY (a short phrase, e.g. "the book's outputs").
# Idempotent: with every package installed it runs no apt command at all. It installs as root, or through sudo when
# sudo needs no password (GitHub's runners); otherwise it stops at once with one sentence naming the command to run.
# Exit: 0 installed or nothing to do, 1 cannot install (the sentence says why). SYSTEM_DEPS=no: only say what is
# missing and go on. A machine without dpkg-query (not Debian or Ubuntu) is told what to install and goes on.
set -euo pipefail
who=$1 why=$2
shift 2
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "$who: this is not a Debian or Ubuntu machine (no dpkg-query), so nothing is installed; $why need the equivalents of: $*." >&2
  exit 0
fi
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
command="apt-get install -y ${missing[*]}"
if [ "${SYSTEM_DEPS:-yes}" = "no" ]; then
  echo "$who: SYSTEM_DEPS=no, so the missing Debian packages for $why are not installed (sudo $command installs them)." >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  run=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
  run=(sudo -n)
else
  echo "$who: $why need Debian packages that are missing, and installing them needs root: run 'sudo $command' (or the same as root), then run $who again." >&2
  exit 1
fi
echo "$who: installing the Debian packages $why need: ${missing[*]}" >&2
if ! { "${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq && "${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
  echo "$who: apt-get could not install ${missing[*]} (its messages are above); fix that, or run 'sudo $command' by hand, then run $who again." >&2
  exit 1
fi
