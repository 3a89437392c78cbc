#!/usr/bin/env bash
# Installs mermaid.js from npm (package.json, pinned by package-lock.json) into node_modules/, which `tools build`
# uses to draw ```mermaid diagrams. Idempotent: with node_modules/ newer than the lock it runs nothing.
# Installs Debian's nodejs and npm only when the npm command is missing. `--optional`: a machine without npm (and
# without root to install it) is told how diagrams can be enabled, and the script succeeds (`make install`).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
script="$here/node_modules/mermaid/dist/mermaid.min.js"
optional=false
[ "${1:-}" = "--optional" ] && optional=true
if [ -f "$script" ] && [ "$script" -nt "$here/package-lock.json" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-node-deps: npm is missing; install Debian's nodejs and npm, then run this again to draw mermaid diagrams." >&2
    $optional && exit 0
    exit 1
  fi
  echo "install-node-deps: installing Debian's nodejs and npm"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; }; then
    echo "install-node-deps: apt-get could not install nodejs and npm; mermaid diagrams will be shown as code." >&2
    $optional && exit 0
    exit 1
  fi
fi
cd "$here"
if ! npm ci --no-audit --no-fund --loglevel=error; then
  echo "install-node-deps: npm ci failed; mermaid diagrams will be shown as code." >&2
  $optional && exit 0
  exit 1
fi
touch "$script"  # newer than the lock: the next run does nothing
