#!/usr/bin/env bash
# mnemo's whole test suite, from a fresh clone: installs what the build needs, fetches the
# embedding model, builds every binary and runs every test (unit and end-to-end), then checks
# the Debian package.
# Cargo's target dir defaults to ~/.cache/mnemo/target so repeat runs are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packaging/deps.sh --test
export PATH="$HOME/.cargo/bin:$PATH"
packaging/fetch-model.sh
# The MCP client the bridge's end-to-end test drives (the official Python SDK).
packaging/mcp-client.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mnemo/target}"

cargo build --workspace --bins
cargo test --workspace
# The Debian package, built from these binaries, unpacked and run (installed with dpkg in CI).
packaging/check-deb.sh
