#!/usr/bin/env bash
# Installs the npm packages of package.json (pinned by package-lock.json) into node_modules/: mermaid.js, which
# `tools build` uses to draw ```mermaid diagrams, and the validators the tests run on the outputs (devDependencies:
# axe-core, the Nu HTML checker vnu-jar, DAISY Ace). Idempotent: with node_modules/ newer than the lock it runs nothing.
# Install scripts are never run (--ignore-scripts): none is needed, and Ace's Electron and Puppeteer would download
# browsers (the tests drive Debian's Chromium). Installs Debian's nodejs and npm only when the npm command is missing.
# `--optional` (`make install`): mermaid only, and a machine without npm (and without root to install it) is told how
# diagrams can be enabled, and the script succeeds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
optional=false
[ "${1:-}" = "--optional" ] && optional=true
mermaid="$here/node_modules/mermaid/dist/mermaid.min.js"
stamp="$here/node_modules/.installed-validators"  # the devDependencies are in (a --optional run leaves them out)
if $optional; then
  [ -f "$mermaid" ] && [ "$mermaid" -nt "$here/package-lock.json" ] && exit 0
else
  present=true
  for file in "$mermaid" "$here/node_modules/axe-core/axe.min.js" "$here/node_modules/vnu-jar/build/dist/vnu.jar" "$here/node_modules/@daisy/ace/bin/ace-puppeteer.js"; do
    [ -f "$file" ] || present=false
  done
  $present && [ -f "$stamp" ] && [ "$stamp" -nt "$here/package-lock.json" ] && exit 0
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
omit=()
$optional && omit=(--omit=dev)
export PUPPETEER_SKIP_DOWNLOAD=1 ELECTRON_SKIP_BINARY_DOWNLOAD=1
if ! npm ci --ignore-scripts "${omit[@]}" --no-audit --no-fund --loglevel=error; then
  echo "install-node-deps: npm ci failed; mermaid diagrams will be shown as code." >&2
  $optional && exit 0
  exit 1
fi
touch "$mermaid"  # newer than the lock: the next run does nothing
$optional || touch "$stamp"
exit 0
