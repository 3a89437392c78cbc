#!/usr/bin/env bash
# install-book-deps.sh [BOOK]: installs the Debian packages the book's outputs need that are missing (what `make book`
# runs before building). The book says which: `tools system-packages` derives them from its languages, the scripts
# its chapters are written in and its mermaid diagrams (tools/build/system_packages.py); scripts/apt-install.sh
# installs them as root or with passwordless sudo, or stops with the command to run.
# TOOLS: the tool's command (default: .venv/bin/tools of this repository).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
book=${1:-chapters}
tools=${TOOLS:-$here/.venv/bin/tools}
listed=$($tools system-packages --book "$book" --names)
read -r -a packages <<< "$listed"
exec bash "$here/scripts/apt-install.sh" "make book" "the book's outputs" "${packages[@]}"
