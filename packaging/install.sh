#!/usr/bin/env bash
# Installs mnemo for this user and starts the service; returns once mnemod answers.
#
#   packaging/install.sh [--prefix DIR] [--debug] [--prebuilt DIR] [--no-service] [--no-start]
#
# Builds the binaries (release; --debug builds faster but runs slower; --prebuilt takes them
# from DIR), fetches the embedding model, installs mnemod, mnemo and mnemo-top into
# PREFIX/bin (default ~/.local) with man pages and completions, and starts mnemod: as a
# systemd user service (socket-activated) where systemd --user runs, as a launchd agent on
# macOS, otherwise (or with --no-service) in the background (log in the data dir). Running it again upgrades in
# place and keeps the data. MNEMO_DATA_DIR / MNEMO_SOCKET / MNEMO_EMBEDDER are honoured.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="$HOME/.local"
profile=release
prebuilt=""
service=1
start=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --debug) profile=dev; shift ;;
    --prebuilt) prebuilt="$2"; shift 2 ;;
    --no-service) service=0; shift ;;
    --no-start) start=0; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ -n "$prebuilt" ]; then
  outdir="$prebuilt"
else
  packaging/deps.sh
  export PATH="$HOME/.cargo/bin:$PATH"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mnemo/target}"
  echo "building mnemo ($profile profile; the first build takes a while)..."
  cargo build --profile "$profile" --bins
  outdir="$CARGO_TARGET_DIR/$([ "$profile" = dev ] && echo debug || echo "$profile")"
fi

[ "${MNEMO_EMBEDDER:-minilm}" != minilm ] || packaging/fetch-model.sh

mkdir -p "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
  "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
# Release binaries are installed stripped of their symbols (mnemod: ~70 MB less).
strip_flag=""
if [ "$profile" != dev ] && command -v strip >/dev/null; then strip_flag="-s"; fi
for bin in mnemod mnemo mnemo-top; do
  # Copy then rename: a running mnemod keeps its old file until it restarts.
  install -m 0755 $strip_flag "$outdir/$bin" "$prefix/bin/$bin.new"
  mv "$prefix/bin/$bin.new" "$prefix/bin/$bin"
  "$prefix/bin/$bin" --generate-man > "$prefix/share/man/man1/$bin.1"
done
"$prefix/bin/mnemo" completions bash > "$prefix/share/bash-completion/completions/mnemo"
"$prefix/bin/mnemo" completions zsh > "$prefix/share/zsh/site-functions/_mnemo"
"$prefix/bin/mnemo" completions fish > "$prefix/share/fish/vendor_completions.d/mnemo.fish"
echo "installed mnemod, mnemo and mnemo-top in $prefix/bin (man pages and completions under $prefix/share)"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "note: add $prefix/bin to your PATH" ;; esac

[ "$start" = 1 ] || exit 0

mnemo="$prefix/bin/mnemo"
if [ "$service" = 1 ] && command -v systemctl >/dev/null && systemctl --user show-environment >/dev/null 2>&1; then
  unit_dir="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
  mkdir -p "$unit_dir"
  sed "s#%h/.local/bin#$prefix/bin#g" packaging/systemd/mnemod.service > "$unit_dir/mnemod.service"
  cp packaging/systemd/mnemod.socket "$unit_dir/mnemod.socket"
  systemctl --user daemon-reload
  systemctl --user enable mnemod.socket mnemod.service >/dev/null 2>&1
  systemctl --user restart mnemod.socket mnemod.service
  echo "mnemod runs as a systemd user service (systemctl --user status mnemod)"
elif [ "$service" = 1 ] && [ "$(uname)" = Darwin ] && command -v launchctl >/dev/null; then
  agents="$HOME/Library/LaunchAgents"
  mkdir -p "$agents" "$HOME/Library/Logs/mnemo"
  sed -e "s#MNEMOD_PATH#$prefix/bin/mnemod#" -e "s#HOME_DIR#$HOME#g" \
    packaging/launchd/io.mnemo.mnemod.plist > "$agents/io.mnemo.mnemod.plist"
  launchctl unload "$agents/io.mnemo.mnemod.plist" 2>/dev/null || true
  launchctl load -w "$agents/io.mnemo.mnemod.plist"
  echo "mnemod runs as a launchd agent (launchctl list io.mnemo.mnemod; log ~/Library/Logs/mnemo)"
else
  # Upgrade: stop the running mnemod and wait until it has let go of its data dir.
  if "$mnemo" shutdown >/dev/null 2>&1; then
    for _ in $(seq 1 50); do "$mnemo" ping >/dev/null 2>&1 || break; sleep 0.2; done
    sleep 0.5
  fi
  data_dir="${MNEMO_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/mnemo}"
  mkdir -p "$data_dir"
  nohup "$prefix/bin/mnemod" run >>"$data_dir/mnemod.log" 2>&1 &
  pid=$!
  echo "mnemod started in the background (pid $pid, log $data_dir/mnemod.log); stop it with: mnemo shutdown"
fi
for _ in $(seq 1 300); do
  if "$mnemo" ping >/dev/null 2>&1; then
    "$mnemo" status
    exit 0
  fi
  # A mnemod that refused to start (a socket directory open to others, a bad config) says
  # why in its log's last lines: show them now rather than after the whole wait.
  if [ -n "${pid:-}" ] && ! kill -0 "$pid" 2>/dev/null; then
    echo "mnemod stopped as it started; the end of $data_dir/mnemod.log:" >&2
    tail -n 3 "$data_dir/mnemod.log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "mnemod did not answer within 60 s; see its log ($([ -n "${pid:-}" ] && echo "$data_dir/mnemod.log" || echo "journalctl --user -u mnemod, or ~/Library/Logs/mnemo"))" >&2
exit 1
