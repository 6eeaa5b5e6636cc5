#!/usr/bin/env bash
# Installs mnemo for this user and starts the service; returns once mnemod answers.
#
#   packaging/install.sh [--prefix DIR] [--debug] [--no-start]
#
# Builds the binaries (release; --debug builds faster but runs slower), fetches the
# embedding model, installs mnemod, mnemo into PREFIX/bin (default ~/.local), and starts
# mnemod: as a systemd user service where systemd --user runs, otherwise in the background
# (log in the data dir). Running it again upgrades in place and keeps the data.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="$HOME/.local"
profile=release
start=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --debug) profile=dev; shift ;;
    --no-start) start=0; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

packaging/deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mnemo/target}"
echo "building mnemo ($profile profile; the first build takes a while)..."
cargo build --profile "$profile" --bins
outdir="$CARGO_TARGET_DIR/$([ "$profile" = dev ] && echo debug || echo "$profile")"

packaging/fetch-model.sh

mkdir -p "$prefix/bin"
for bin in mnemod mnemo; do
  install -m 0755 "$outdir/$bin" "$prefix/bin/$bin.new"
  mv "$prefix/bin/$bin.new" "$prefix/bin/$bin"
done
echo "installed mnemod and mnemo in $prefix/bin"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "note: add $prefix/bin to your PATH" ;; esac

[ "$start" = 1 ] || exit 0

mnemo="$prefix/bin/mnemo"
if command -v systemctl >/dev/null && systemctl --user show-environment >/dev/null 2>&1; then
  unit_dir="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
  mkdir -p "$unit_dir"
  sed "s#%h/.local/bin#$prefix/bin#g" packaging/systemd/mnemod.service > "$unit_dir/mnemod.service"
  systemctl --user daemon-reload
  systemctl --user enable mnemod >/dev/null 2>&1
  systemctl --user restart mnemod
  echo "mnemod runs as a systemd user service (systemctl --user status mnemod)"
else
  "$mnemo" shutdown >/dev/null 2>&1 && sleep 1 || true
  data_dir="${MNEMO_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/mnemo}"
  mkdir -p "$data_dir"
  nohup "$prefix/bin/mnemod" run >>"$data_dir/mnemod.log" 2>&1 &
  echo "mnemod started in the background (pid $!, log $data_dir/mnemod.log); stop it with: mnemo shutdown"
fi
for _ in $(seq 1 300); do
  if "$mnemo" ping >/dev/null 2>&1; then
    "$mnemo" status
    exit 0
  fi
  sleep 0.2
done
echo "mnemod did not answer within 60 s; see its log" >&2
exit 1
