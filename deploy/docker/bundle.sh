#!/usr/bin/env bash
# deploy/docker/bundle.sh BUILD_DIR OUT_DIR - lay out a built Remora the way the images
# carry it, self-contained but for glibc and libstdc++:
#   OUT_DIR/bin        remora-server, remora, remora-device-plugin, remora-webhook,
#                      remora-node (one server per GPU; deploy/docker/remora-node.sh)
#   OUT_DIR/lib/emu    the emulated GPU's driver and libraries
#   OUT_DIR/lib/deps   every other shared library the binaries and emu libraries load
#   OUT_DIR/lib/stub   the stub libraries a tenant loads, and every library they load,
#                      in one directory: LD_LIBRARY_PATH=<it> is all a tenant needs
# glibc (libc, libm, libdl, librt, libpthread, the loader) and libstdc++/libgcc_s stay
# the tenant's own: a program's C++ runtime must not be replaced under it.
set -euo pipefail
build=${1:?usage: bundle.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bundle.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/emu" "$out/lib/deps" "$out/lib/stub"
for b in remora-server remora remora-device-plugin remora-webhook; do
  [ -x "$build/bin/$b" ] && cp "$build/bin/$b" "$out/bin/"
done
[ -x "$out/bin/remora-server" ] || { echo "bundle: $build/bin/remora-server missing" >&2; exit 1; }
cp "$here/remora-node.sh" "$out/bin/remora-node"
cp -P "$build"/lib/emu/* "$out/lib/emu/"
cp -P "$build"/lib/stub/* "$out/lib/stub/"

# The libraries `ldd` resolves for FILES, outside glibc and the C++ runtime.
deps_of() {
  for f in "$@"; do
    [ -L "$f" ] && continue
    ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
  done | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' || true
}
copy_into() {  # DIR LIB... : copy what is not already in DIR, by file name
  local dir=$1; shift
  for lib in "$@"; do
    [ -e "$dir/$(basename "$lib")" ] || cp -L "$lib" "$dir/$(basename "$lib")"
  done
}
mapfile -t server_deps < <(deps_of "$out"/bin/remora* "$out"/lib/emu/*.so*)
copy_into "$out/lib/deps" "${server_deps[@]}"
mapfile -t stub_deps < <(deps_of "$out"/lib/stub/*.so*)
copy_into "$out/lib/stub" "${stub_deps[@]}"
find "$out" -type f -name '*.so*' -exec strip --strip-debug {} \; 2>/dev/null || true
find "$out/bin" -type f ! -name remora-node -exec strip --strip-debug {} \; 2>/dev/null || true
