#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI `mcp`), the MCP client the end-to-end test drives
# `mnemo mcp` with, into ~/.cache/mnemo/mcp-client (or $MNEMO_MCP_CLIENT). Idempotent.
# pip's --target leaves the system's Python untouched (no venv module needed).
set -euo pipefail

VERSION="2.3.0"
dest="${MNEMO_MCP_CLIENT:-$HOME/.cache/mnemo/mcp-client}"
python=$(command -v python3 || command -v python || true)
[ -n "$python" ] || { echo "mcp-client: python3 with pip is needed" >&2; exit 1; }

if [ -f "$dest/.installed-$VERSION" ]; then
  exit 0
fi
echo "installing the MCP Python SDK $VERSION into $dest..."
rm -rf "$dest"
"$python" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --root-user-action=ignore --target "$dest" "mcp==$VERSION"
touch "$dest/.installed-$VERSION"
