#!/usr/bin/env bash
# Builds the container driver's base image offline: a root filesystem holding this host's `node` and npm, the
# libraries `ldd` lists for them, a shell, CA certificates and a minimal /etc, imported as one image. For hosts that
# reach no registry (tests, CI, air-gapped servers); elsewhere set HOSTING_BASE_IMAGE to e.g. node:20-slim instead.
#
#   scripts/hosting-base-image.sh [tag]        tag defaults to localhost/plinth-node-base:<node major>
#   ENGINE=docker scripts/hosting-base-image.sh   import with docker instead of podman
#
# Idempotent: an image with the tag, built from the same node version, is kept as it is.
set -euo pipefail

engine=${ENGINE:-podman}
node_bin=$(command -v node)
node_version=$("$node_bin" --version)
major=${node_version#v}; major=${major%%.*}
tag=${1:-localhost/plinth-node-base:$major}

existing=$("$engine" image inspect --format '{{ index .Config.Labels "plinth.node-version" }}' "$tag" 2>/dev/null || true)
if [ "$existing" = "$node_version" ]; then
  echo "$tag already holds node $node_version"
  exit 0
fi

npm_root=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT

# A binary and every library it loads, at the same paths as on the host.
copy_with_libraries () {
  local file library
  for file in "$@"; do
    install -D -m 0755 "$(readlink -f "$file")" "$rootfs$file"
    for library in $(ldd "$file" | grep -o '/[^ )]*'); do
      [ -e "$rootfs$library" ] || install -D -m 0755 "$(readlink -f "$library")" "$rootfs$library"
    done
  done
}

copy_with_libraries "$node_bin" /bin/sh /usr/bin/env
[ "$node_bin" = /usr/bin/node ] || ln -s "$node_bin" "$rootfs/usr/bin/node"
mkdir -p "$rootfs/usr/lib/node_modules" "$rootfs/etc/ssl" "$rootfs/tmp" "$rootfs/app" "$rootfs/root"
cp -a "$npm_root" "$rootfs/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/bin/npx"
cp -rL /etc/ssl/certs "$rootfs/etc/ssl/certs"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
printf 'hosts: files dns\n' > "$rootfs/etc/nsswitch.conf"

tar -C "$rootfs" -c . | "$engine" import \
  --change 'ENV PATH=/app/node_modules/.bin:/usr/local/bin:/usr/bin:/bin' \
  --change 'WORKDIR /app' \
  --change "LABEL plinth.node-version=$node_version" \
  - "$tag" >/dev/null
echo "$tag imported with node $node_version"
