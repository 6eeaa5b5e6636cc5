#!/usr/bin/env bash
# Installs what building mnemo needs and is not already there: a Rust toolchain (rustup),
# a C compiler, protoc (LanceDB's build needs it), python3 with pip (for the model), and
# pkg-config with libdbus's headers (the OS keyring is reached over D-Bus on Linux).
# With --test, also what the test suite drives: tmux (mnemo-top's end-to-end test), setpriv
# (the read-only store test drops root's capabilities with it), and a session bus with
# GNOME Keyring (the keyring test runs a private Secret Service).
set -euo pipefail

need=()
if [ "${1:-}" = "--test" ]; then
  command -v tmux >/dev/null || need+=(tmux)
  command -v systemd-analyze >/dev/null || need+=(systemd)
  command -v setpriv >/dev/null || need+=(util-linux)
  command -v dbus-daemon >/dev/null || need+=(dbus-daemon)
  command -v dbus-send >/dev/null || need+=(dbus-bin)
  command -v gnome-keyring-daemon >/dev/null || need+=(gnome-keyring)
fi
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists dbus-1 2>/dev/null || need+=(libdbus-1-dev)
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
