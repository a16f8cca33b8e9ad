#!/usr/bin/env bash
# Lookout's charting library, uPlot (MIT licence), brought in at install time from the npm
# registry: the pinned version, checked against its pinned sha512, unpacked into
# armada/lookout/static/vendor/uplot (not in git; the wheel includes it). Run by `make`.
set -euo pipefail
VERSION=1.6.30
INTEGRITY="sha512-48oVVRALM/128ttW19F2a2xobc2WfGdJ0VJFX00099CfqbCTuML7L2OrTKxNzeFP34eo1+yJbqFSoFAp2u28/Q=="
TARGET="${1:-armada/lookout/static/vendor/uplot}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack "uplot@${VERSION}" --silent >/dev/null)
tarball="$work/uplot-${VERSION}.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
    echo "uplot-${VERSION}.tgz: checksum $actual, expected $INTEGRITY" >&2
    exit 1
fi
tar -xzf "$tarball" -C "$work" package/LICENSE package/dist/uPlot.esm.js package/dist/uPlot.min.css
mkdir -p "$TARGET"
cp "$work/package/LICENSE" "$work/package/dist/uPlot.esm.js" "$work/package/dist/uPlot.min.css" "$TARGET/"
echo "$VERSION" > "$TARGET/VERSION"
