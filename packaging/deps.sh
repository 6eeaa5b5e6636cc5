#!/usr/bin/env bash
# Installs what building mnemo needs and is not already there: a Rust toolchain (rustup),
# a C compiler, protoc (LanceDB's build needs it) and python3 with pip (for the model).
# With --test, also what the test suite drives: tmux (mnemo-top's end-to-end test) and
# setpriv (the read-only store test drops root's capabilities with it).
set -euo pipefail

need=()
if [ "${1:-}" = "--test" ]; then
  command -v tmux >/dev/null || need+=(tmux)
  command -v systemd-analyze >/dev/null || need+=(systemd)
  command -v setpriv >/dev/null || need+=(util-linux)
fi
command -v protoc >/dev/null || need+=(protobuf-compiler)
command -v cc >/dev/null || need+=(build-essential)
command -v python3 >/dev/null || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
command -v curl >/dev/null || need+=(curl)

if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing ${need[*]} with apt-get..."
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "please install: ${need[*]} (protoc is in your distribution's protobuf package)" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] || {
    echo "installing Rust with rustup..."
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  }
fi
