#!/usr/bin/env bash
# Checks the Debian package end to end: builds it from the binaries the tests built, checks
# its file list, unpacks it and runs the packaged binaries (version, start, status, stop),
# runs lintian when present, and under CI=true installs it with dpkg and runs it installed.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mnemo/target}"

packaging/build-deb.sh --profile dev --no-build
deb=$(ls -t "$CARGO_TARGET_DIR"/debian/mnemo_*.deb | head -1)
echo "built $deb"

list=$(dpkg-deb -c "$deb")
for f in ./usr/bin/mnemod ./usr/bin/mnemo ./usr/bin/mnemo-top \
         ./usr/lib/systemd/user/mnemod.service ./usr/lib/systemd/user/mnemod.socket \
         ./usr/share/man/man1/mnemod.1.gz ./usr/share/man/man1/mnemo.1.gz ./usr/share/man/man1/mnemo-top.1.gz \
         ./usr/share/bash-completion/completions/mnemo ./usr/share/zsh/vendor-completions/_mnemo \
         ./usr/share/fish/vendor_completions.d/mnemo.fish ./usr/share/doc/mnemo/README.md \
         ./usr/share/mnemo/fetch-model.sh; do
  grep -q " $f\$" <<<"$list" || { echo "check-deb: $f missing from the package" >&2; exit 1; }
done
dpkg-deb -f "$deb" Package Version Depends
grep -q "ExecStart=/usr/bin/mnemod" < <(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/user/mnemod.service)

# Runs the packaged mnemod and mnemo from $1 against a private data dir and socket.
smoke() {
  local bin=$1 tmp
  tmp=$(mktemp -d)
  "$bin/mnemo" --version
  "$bin/mnemod" --version
  MNEMO_DATA_DIR="$tmp/data" MNEMO_SOCKET="$tmp/s.sock" MNEMO_EMBEDDER=hashed \
    "$bin/mnemod" run > "$tmp/log" 2>&1 &
  for _ in $(seq 1 100); do MNEMO_SOCKET="$tmp/s.sock" "$bin/mnemo" ping >/dev/null 2>&1 && break; sleep 0.1; done
  MNEMO_SOCKET="$tmp/s.sock" "$bin/mnemo" status
  MNEMO_SOCKET="$tmp/s.sock" "$bin/mnemo" shutdown
  wait
  rm -rf "$tmp"
}

root=$(mktemp -d)
dpkg-deb -x "$deb" "$root"
smoke "$root/usr/bin"
rm -rf "$root"

if command -v lintian >/dev/null; then
  # Errors fail the check; the dev build's unstripped binaries are expected here.
  lintian --fail-on error --suppress-tags unstripped-binary-or-object "$deb"
else
  echo "lintian not installed; skipped"
fi

if [ "${CI:-}" = true ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo dpkg -i "$deb"
  smoke /usr/bin
  $sudo dpkg -r mnemo
fi
echo "check-deb: ok"
