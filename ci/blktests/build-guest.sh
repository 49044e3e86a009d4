#!/bin/bash
# Build the blktests guest: the lane's guest (ci/lane/build-guest.sh: the Debian kernel, its modules, busybox,
# nvme-cli, fio, ernicd) plus what blktests needs and busybox cannot give (GNU userland: bash as /bin/sh, gawk,
# coreutils, util-linux, uuid-runtime, xfsprogs, diffutils, ...), the brd and xfs modules for its results
# directory, the kernel's config for its option checks, blktests itself with its src/ helpers built here, and
# the NVME_TARGET_CONTROL script for ernicd.
#
# Usage: ci/blktests/build-guest.sh BLKTESTS_DIR
# Env:   ERNICD, ERNICCTL, LOAD_TOOL as for ci/lane/build-guest.sh; BLKT_OUT=DIR (default build/blktests)
# Out:   $BLKT_OUT/vmlinux, $BLKT_OUT/initramfs.cpio (rebuilt only when an input changes)
set -eu

die() { echo "blktests-guest: $*" >&2; exit 1; }
say() { echo "blktests-guest: $*"; }

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SRC=${1:?usage: build-guest.sh BLKTESTS_DIR}
OUT=${BLKT_OUT:-$ROOT/build/blktests}
LANE_OUT=${LANE_OUT:-$ROOT/build/lane}
# Debian packages whose programs blktests' check, common/ and tests/nvme call.
PKGS="bash gawk coreutils util-linux uuid-runtime xfsprogs e2fsprogs diffutils grep sed findutils gzip procps
kmod nvme-cli fio iproute2 mount bsdextrautils"
MODULES="brd xfs"

[ -x "$SRC/check" ] || die "no blktests at $SRC (no $SRC/check)"
for p in $PKGS; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || die "missing package $p (run: ci/deps.sh blktests)"
done

# --- 1. the lane's guest is the base: its kernel, modules and tools
LANE_OUT=$LANE_OUT "$ROOT/ci/lane/build-guest.sh"
BASE=$LANE_OUT/rootfs
[ -d "$BASE" ] || die "the lane's build left no $BASE"
# The control script drives ernicd through ernicctl.
[ ! -x "$BASE/usr/bin/ernicd" ] || [ -x "$BASE/usr/bin/ernicctl" ] ||
	die "the lane's guest has ernicd but no ernicctl (build it: make build/ernicctl)"
KREL=$(cat "$LANE_OUT/kernel-release")
KROOT=$(ls -d "$LANE_OUT"/cache/linux-image-*"$KREL"*/root 2>/dev/null | head -n 1)
[ -d "$KROOT" ] || die "no unpacked kernel for $KREL under $LANE_OUT/cache"

# --- 2. blktests, copied (the checkout is never written) with its helpers built
mkdir -p "$OUT"
B=$OUT/blktests
if [ ! -e "$B/.built" ] || [ -n "$(find "$SRC" -newer "$B/.built" -not -path '*/results/*' -print -quit)" ]; then
	say "copying blktests from $SRC and building src/"
	rm -rf "$B"
	mkdir -p "$B"
	(cd "$SRC" && tar --exclude=./results --exclude=./.git -cf - .) | (cd "$B" && tar -xf -)
	make -s -C "$B/src" >"$OUT/src-build.log" 2>&1 || die "make -C src failed, see $OUT/src-build.log"
	touch "$B/.built"
fi

# --- 3. what goes in, and whether it changed
BINS=""
for p in $PKGS; do
	for f in $(dpkg -L "$p" | grep -E '^/(usr/)?s?bin/[^/]+$'); do
		[ -f "$f" ] && [ -x "$f" ] && BINS="$BINS $f"
	done
done
LIBS=""
for t in $BINS $(find "$B/src" -maxdepth 1 -type f -perm -u+x); do
	out=$(ldd "$t" 2>/dev/null) || continue
	for l in $(printf '%s\n' "$out" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
		case " $LIBS " in *" $l "*) ;; *) LIBS="$LIBS $l" ;; esac
	done
done
MODFILES=""
for m in $MODULES; do
	deps=$(modprobe -d "$KROOT" -S "$KREL" --show-depends "$m" 2>/dev/null) || die "module $m not found in $KREL"
	for f in $(printf '%s\n' "$deps" | awk '$1 == "insmod" { print $2 }'); do
		MODFILES="$MODFILES ${f#"$KROOT"/}"
	done
done
STAMP=$({
	cat "$LANE_OUT/initramfs.stamp"
	echo "$MODFILES"
	sha256sum "$HERE/build-guest.sh" "$HERE/guest-init.sh" "$HERE/ernicd-target" "$HERE/udevadm"
	# shellcheck disable=SC2086
	sha256sum $BINS $LIBS
	stat -c '%Y' "$B/.built"
} | sha256sum | cut -d' ' -f1)
INITRD=$OUT/initramfs.cpio
if [ -s "$INITRD" ] && [ "$(cat "$OUT/initramfs.stamp" 2>/dev/null)" = "$STAMP" ]; then
	say "guest up to date"
	exit 0
fi

# --- 4. the lane's root, then the GNU tools over busybox's applets (a symlink is removed before the real file
# goes in, so busybox itself is never written through it)
say "building initramfs"
R=$OUT/rootfs
rm -rf "$R"
cp -a "$BASE" "$R"
put() { # HOSTPATH: into the merged-/usr root
	local dst
	case "$1" in /usr/*) dst=$R$1 ;; *) dst=$R/usr$1 ;; esac
	mkdir -p "$(dirname "$dst")"
	[ -L "$dst" ] && rm -f "$dst"
	cp -L "$1" "$dst"
}
for f in $BINS $LIBS; do put "$f"; done
# check runs under bash; busybox sh makes blktests' zgrep-based kernel option checks fail.
ln -sf bash "$R/usr/bin/sh"
# No udev in the guest: its udevadm settle waits for the NVMe namespace scan instead.
cp "$HERE/udevadm" "$R/usr/bin/udevadm"
chmod 755 "$R/usr/bin/udevadm"
for f in $MODFILES; do
	mkdir -p "$(dirname "$R/usr/$f")"
	cp "$KROOT/$f" "$R/usr/$f"
done
depmod -b "$R" "$KREL" || die "depmod failed"
mkdir -p "$R/boot"
cp "$KROOT/boot/config-$KREL" "$R/boot/"
ldconfig -r "$R" || die "ldconfig -r $R failed"
cp -a "$B" "$R/blktests"
mkdir -p "$R/blktests-ctl"
cp "$HERE/ernicd-target" "$R/blktests-ctl/ernicd-target"
chmod 755 "$R/blktests-ctl/ernicd-target"
cp "$HERE/guest-init.sh" "$R/init"
chmod 755 "$R/init"
(cd "$R" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet --reproducible -R 0:0) \
	>"$INITRD.tmp" || die "cpio failed"
mv "$INITRD.tmp" "$INITRD"
cp "$LANE_OUT/vmlinux" "$OUT/vmlinux"
echo "$STAMP" >"$OUT/initramfs.stamp"
rm -rf "$R"
say "initramfs $(du -m "$INITRD" | cut -f1) MiB"
