#!/bin/sh
# Fetch and configure the fio source of exactly the installed fio, for its headers.
#
# Usage: engine/fio-src.sh DIR
#
# Debian's fio package ships no headers, and an external engine must agree
# with the binary on struct thread_data, io_u, fio_file and ioengine_ops. The
# source package of the installed version is the only thing that guarantees
# that, so it is fetched from the Debian archive the machine already uses,
# through a private sources list that leaves the system's apt state alone.
# Only ./configure runs: it writes config-host.h, which changes struct layouts.
# DIR is reused while its stamp names the installed package version, so
# rebuilds need no network.
set -eu

die() {
	echo "engine/fio-src.sh: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: engine/fio-src.sh DIR"
dest=$1

command -v fio >/dev/null 2>&1 || die "fio is not installed (ci/deps.sh engine)"
pkgver=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) || die "fio is not a Debian package here; cannot match its source"
binver=$(fio --version 2>/dev/null) || die "fio --version failed"
binver=${binver#fio-}
# Debian version: [epoch:]upstream[-revision]; the binary reports upstream.
upstream=${pkgver#*:}
upstream=${upstream%-*}
[ "$binver" = "$upstream" ] || die "fio --version says $binver but package fio is $pkgver; cannot match the source"

if [ -f "$dest/.ernic-fio-version" ] && [ "$(cat "$dest/.ernic-fio-version")" = "$pkgver" ] &&
	[ -f "$dest/config-host.h" ] && [ -f "$dest/ioengines.h" ]; then
	exit 0
fi

command -v dpkg-source >/dev/null 2>&1 || die "dpkg-source is missing (package dpkg-dev, ci/deps.sh engine)"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "$keyring is missing (package debian-archive-keyring)"

# The archive this machine installs from: the first Debian URI of its apt sources.
uri=""
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /debian\/?$/) { print $i; exit } }' "$f")
	[ -n "$uri" ] && break
done
if [ -z "$uri" ]; then
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /debian\/?$/) { print $i; exit } }' "$f")
		[ -n "$uri" ] && break
	done
fi
[ -n "$uri" ] || die "no Debian archive URI in /etc/apt/sources.list*; cannot fetch fio $pkgver source"
. /etc/os-release
suite=${VERSION_CODENAME:-bookworm}

work=$(mktemp -d "${TMPDIR:-/tmp}/ernic-fio-src.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/get"
cat >"$work/sources" <<SRC
Types: deb-src
URIs: $uri
Suites: $suite $suite-updates
Components: main
Signed-By: $keyring
SRC
# deb822 lists need a .sources name for apt to read them.
mv "$work/sources" "$work/fio-src.sources"
apt_opts="-o Dir::Etc::SourceList=$work/fio-src.sources -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists=$work/lists -o Dir::Cache::Archives=$work/archives"
# As root apt would hand the download to user _apt, who cannot write into $work.
[ "$(id -u)" -ne 0 ] || apt_opts="$apt_opts -o APT::Sandbox::User=root"

echo "engine/fio-src.sh: fetching fio $pkgver source from $uri"
# shellcheck disable=SC2086
apt-get -qq $apt_opts update >"$work/log" 2>&1 || { cat "$work/log" >&2; die "apt-get update of deb-src $uri failed"; }
# shellcheck disable=SC2086
(cd "$work/get" && apt-get -qq $apt_opts source --download-only "fio=$pkgver") >"$work/log" 2>&1 ||
	{ cat "$work/log" >&2; die "source package fio=$pkgver is not in $uri $suite"; }
dsc=$(ls "$work/get"/fio_*.dsc 2>/dev/null | head -n 1)
[ -n "$dsc" ] || die "no .dsc downloaded for fio $pkgver"
(cd "$work/get" && dpkg-source -q -x "$(basename "$dsc")" src) >"$work/log" 2>&1 ||
	{ cat "$work/log" >&2; die "dpkg-source -x $(basename "$dsc") failed"; }

# Debian builds with --disable-native; struct layouts do not depend on the rest.
(cd "$work/get/src" && ./configure --disable-native) >"$work/log" 2>&1 ||
	{ cat "$work/log" >&2; die "fio ./configure failed"; }
[ -f "$work/get/src/config-host.h" ] || die "fio ./configure wrote no config-host.h"

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/get/src" "$dest"
echo "$pkgver" >"$dest/.ernic-fio-version"
echo "engine/fio-src.sh: fio $pkgver source configured in $dest"
