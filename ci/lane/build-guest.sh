#!/bin/bash
# Build the lane's guest: a Debian kernel (its ELF, for a fast boot under TCG) and an uncompressed cpio initramfs
# holding busybox, kmod, nvme-cli, fio, jq, ss, the NVMe/TCP host and target modules, the suites, and ernicd,
# ernicctl, nvmf_tcp_load and tcp_rtt if built.
# suites/run needs bash and GNU date (busybox date has no %N); busybox provides the rest of what it calls.
#
# The lane's integrity case is suites/integrity/ram-8m.fio (8 MiB, not ram.fio's 512 MiB: that many 4 KiB writes
# and their verify reads take many minutes under TCG and do not fit the lane's namespaces).
#
# Usage: ci/lane/build-guest.sh
# Env:   ERNICD=PATH   ernicd binary to include (default build/ernicd, included only if executable)
#        ERNICD_B=PATH  a second ernicd build to include as /bin/ernicd-b (default none; guest-init.sh runs it
#                       beside ernicd in the suite rounds)
#        GUEST_PERF=PATH  perf to include (default none; ci/lane/run.sh sets it for LANE_PERF=1)
#        ERNICCTL=PATH ernicctl binary to include (default build/ernicctl, only if executable)
#        LOAD_TOOL=PATH  nvmf_tcp_load binary to include (default build/nvmf_tcp_load, only if executable)
#        RTT_TOOL=PATH  tcp_rtt binary to include (default build/tcp_rtt, only if executable)
#        LANE_OUT=DIR  output directory (default build/lane)
# Out:   $LANE_OUT/vmlinux, $LANE_OUT/initramfs.cpio, $LANE_OUT/kernel-release
# The kernel .deb is kept in $LANE_OUT/cache; the initramfs is rebuilt only when one of its inputs changes.
set -eu

die() { echo "build-guest: $*" >&2; exit 1; }
say() { echo "build-guest: $*"; }

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${LANE_OUT:-$ROOT/build/lane}
CACHE=$OUT/cache
ERNICD=${ERNICD:-$ROOT/build/ernicd}
ERNICD_B=${ERNICD_B:-}
[ -z "$ERNICD_B" ] || [ -x "$ERNICD_B" ] || die "ERNICD_B must be an executable ernicd (got '$ERNICD_B')"
LOAD_TOOL=${LOAD_TOOL:-$ROOT/build/nvmf_tcp_load}
ENGINE_SO=${ENGINE_SO:-$ROOT/build/ernic-fio.so} # the fio engine (the passthru phase and suites/run on /dev/ng0n1)
ERNICCTL=${ERNICCTL:-$ROOT/build/ernicctl} # the ctl phase's and the blktests lane's control requests
RDMA_SGL_TOOL=${RDMA_SGL_TOOL:-$ROOT/build/nvmf_rdma_sgl} # the RDMA phase's keyed SGL cases, when built
RTT_TOOL=${RTT_TOOL:-$ROOT/build/tcp_rtt} # a bare loopback TCP round trip, printed beside the ratios
SUITES=$ROOT/suites
META=linux-image-amd64
# Modules the guest loads; modprobe adds their dependencies. The crc32c providers are requested by name at run
# time (NVMe/TCP digests), so no dependency edge leads to them: they are listed here by hand. tcp_diag lets ss -K
# reset connections (the faults phase).
MODULES="nvme-tcp nvme-fabrics nvme-core nvmet nvmet-tcp configfs null_blk loop crc32c_generic crc32c-intel
inet_diag tcp_diag"
# The RDMA phase (phase-rdma.sh): soft-RoCE on a veth pair, the NVMe/RDMA host and target.
# rxe asks for the "crc32" shash (its ICRC) by name when a link is added: listed by hand, as crc32c above.
MODULES="$MODULES veth rdma_rxe rdma_cm ib_uverbs rdma_ucm nvme-rdma nvmet-rdma crc32_generic"
# The outbox disk the guest leaves its bulk files on (guest-init.sh, outbox_write).
MODULES="$MODULES virtio_pci virtio_blk"
TOOLS="/bin/busybox /bin/kmod /usr/sbin/nvme /usr/bin/fio /usr/bin/jq /usr/bin/bash /usr/bin/date /bin/ss"
# iproute2's ip (veth pairs) and rdma (rxe links, the MR count) for the RDMA phase.
TOOLS="$TOOLS /usr/sbin/ip /usr/bin/rdma"
# perf, for per-case profiles (LANE_PERF=1): the kernel's symbols come from the guest's own /proc/kallsyms.
[ -z "${GUEST_PERF:-}" ] || TOOLS="$TOOLS $GUEST_PERF"
# libibverbs loads its device provider at run time: the rxe one and the driver file that names it.
RXE_PROVIDER=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
RXE_DRIVER=/etc/libibverbs.d/rxe.driver

for t in $TOOLS; do [ -x "$t" ] || die "missing $t (run: ci/deps.sh lane)"; done
for f in "$RXE_PROVIDER" "$RXE_DRIVER"; do [ -e "$f" ] || die "missing $f (run: ci/deps.sh build)"; done
for c in apt-get apt-cache dpkg-deb depmod modprobe ldd ldconfig cpio xz sha256sum; do
	command -v "$c" >/dev/null || die "missing command $c (run: ci/deps.sh lane)"
done
mkdir -p "$CACHE"

# --- 1. the kernel package: resolve linux-image-amd64 to the versioned package it depends on, download once ---
resolve_kernel() {
	apt-cache depends "$META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}
KPKG=$(resolve_kernel || true)
if [ -z "$KPKG" ]; then
	say "apt lists do not know $META; running apt-get update"
	apt-get update -qq >/dev/null 2>&1 || true
	KPKG=$(resolve_kernel || true)
fi
if [ -n "$KPKG" ]; then
	KVERSION=$(apt-cache show --no-all-versions "$KPKG" 2>/dev/null | awk '/^Version:/ { print $2; exit }')
	[ -n "$KVERSION" ] || die "apt-cache shows no version for $KPKG"
	DEB=$CACHE/${KPKG}_$(printf %s "$KVERSION" | sed 's/:/%3a/')_amd64.deb
	if [ ! -s "$DEB" ]; then
		say "downloading $KPKG $KVERSION"
		if (cd "$CACHE" && apt-get download -q -o APT::Sandbox::User=root "$KPKG=$KVERSION" >/dev/null) &&
			[ -s "$DEB" ]; then
			# A newer kernel replaces the older ones in the cache.
			for old in "$CACHE"/linux-image-[0-9]*_amd64.deb; do
				[ "$old" = "$DEB" ] || rm -rf "$old" "${old%.deb}"
			done
		else
			say "apt-get download $KPKG=$KVERSION failed"
			DEB=""
		fi
	fi
fi
if [ -z "$KPKG" ] || [ -z "$DEB" ]; then
	# No apt lists or no archive: fall back on the newest kernel already in the cache.
	DEB=$(ls -1 "$CACHE"/linux-image-[0-9]*_amd64.deb 2>/dev/null | sort -V | tail -n 1)
	[ -n "$DEB" ] || die "cannot fetch $META and no kernel .deb in $CACHE"
	say "using cached $(basename "$DEB")"
fi

# --- 2. unpack it (never installed), depmod, and pull the ELF out of the xz-compressed bzImage ---
KDIR=$CACHE/$(basename "$DEB" .deb)
if [ ! -e "$KDIR/.done" ]; then
	rm -rf "$KDIR"
	mkdir -p "$KDIR"
	say "unpacking $(basename "$DEB")"
	dpkg-deb -x "$DEB" "$KDIR/root"
	KREL=$(ls -1 "$KDIR/root/lib/modules" | head -n 1)
	[ -n "$KREL" ] || die "no lib/modules/<release> in $DEB"
	depmod -b "$KDIR/root" "$KREL" || die "depmod failed on $KDIR/root"
	VMLINUZ=$KDIR/root/boot/vmlinuz-$KREL
	[ -f "$VMLINUZ" ] || die "no boot/vmlinuz-$KREL in $DEB"
	# xz stream magic FD 37 7A 58 5A 00; the first offset that decompresses to an ELF is the kernel.
	found=""
	for off in $(LC_ALL=C grep -obUaP '\xFD7zXZ\x00' "$VMLINUZ" | cut -d: -f1); do
		tail -c +"$((off + 1))" "$VMLINUZ" | xz -dc --single-stream >"$KDIR/vmlinux.tmp" 2>/dev/null || true
		if [ "$(head -c 4 "$KDIR/vmlinux.tmp" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
			found=$off
			break
		fi
	done
	[ -n "$found" ] || die "no xz-compressed ELF found in $VMLINUZ"
	mv "$KDIR/vmlinux.tmp" "$KDIR/vmlinux"
	echo "$KREL" >"$KDIR/kernel-release"
	touch "$KDIR/.done"
fi
KREL=$(cat "$KDIR/kernel-release")
KROOT=$KDIR/root

# --- 3. what goes into the initramfs, and whether it changed ---
# Module closure, in load order, as paths relative to $KROOT.
MODFILES=""
for m in $MODULES; do
	deps=$(modprobe -d "$KROOT" -S "$KREL" --show-depends "$m" 2>/dev/null) || die "module $m not found in $KREL"
	for f in $(printf '%s\n' "$deps" | awk '$1 == "insmod" { print $2 }'); do
		rel=${f#"$KROOT"/}
		case " $MODFILES " in *" $rel "*) ;; *) MODFILES="$MODFILES $rel" ;; esac
	done
done

# Shared libraries of the tools (ldd exits 1 on a static binary such as busybox-static: that is not an error).
LIBS=""
for t in $TOOLS $( [ -x "$ERNICD" ] && echo "$ERNICD" ) ${ERNICD_B:+"$ERNICD_B"} $( [ -x "$LOAD_TOOL" ] && echo "$LOAD_TOOL" ) \
	$( [ -x "$RDMA_SGL_TOOL" ] && echo "$RDMA_SGL_TOOL" ) $( [ -f "$ENGINE_SO" ] && echo "$ENGINE_SO" ) \
	$( [ -x "$ERNICCTL" ] && echo "$ERNICCTL" ) $( [ -x "$RTT_TOOL" ] && echo "$RTT_TOOL" ); do
	out=$(ldd "$t" 2>/dev/null) || continue
	for l in $(printf '%s\n' "$out" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
		case " $LIBS " in *" $l "*) ;; *) LIBS="$LIBS $l" ;; esac
	done
done

HAVE_ERNICD=no
[ -x "$ERNICD" ] && HAVE_ERNICD=yes
HAVE_LOAD_TOOL=no
[ -x "$LOAD_TOOL" ] && HAVE_LOAD_TOOL=yes
manifest() {
	echo "kernel $(basename "$DEB") $KREL"
	echo "modules $MODFILES"
	sha256sum "$HERE/build-guest.sh" "$HERE/guest-init.sh" "$HERE"/phase-*.sh "$RXE_PROVIDER" "$RXE_DRIVER"
	# shellcheck disable=SC2086
	sha256sum $TOOLS $LIBS
	[ "$HAVE_ERNICD" = no ] || sha256sum "$ERNICD"
	[ -z "$ERNICD_B" ] || echo "ernicd-b $(sha256sum <"$ERNICD_B")"
	[ "$HAVE_LOAD_TOOL" = no ] || sha256sum "$LOAD_TOOL"
	[ ! -f "$ENGINE_SO" ] || sha256sum "$ENGINE_SO"
	[ ! -x "$RDMA_SGL_TOOL" ] || sha256sum "$RDMA_SGL_TOOL"
	[ ! -x "$ERNICCTL" ] || sha256sum "$ERNICCTL"
	[ ! -x "$RTT_TOOL" ] || sha256sum "$RTT_TOOL"
	if [ -d "$SUITES" ]; then
		(cd "$SUITES" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
	fi
}
STAMP=$(manifest | sha256sum | cut -d' ' -f1)
INITRD=$OUT/initramfs.cpio
if [ -s "$INITRD" ] && [ -s "$OUT/vmlinux" ] && [ "$(cat "$OUT/initramfs.stamp" 2>/dev/null)" = "$STAMP" ]; then
	say "guest up to date ($KREL, ernicd: $HAVE_ERNICD, nvmf_tcp_load: $HAVE_LOAD_TOOL)"
	exit 0
fi

# --- 4. lay out the root (merged /usr, like Debian) and pack it ---
say "building initramfs ($KREL, ernicd: $HAVE_ERNICD, nvmf_tcp_load: $HAVE_LOAD_TOOL)"
R=$OUT/rootfs
rm -rf "$R"
mkdir -p "$R"/usr/bin "$R"/usr/sbin "$R"/usr/lib "$R"/usr/lib64 "$R"/etc/nvme "$R"/proc "$R"/sys "$R"/dev \
	"$R"/tmp "$R"/run "$R"/results "$R"/ernic
# The kernel opens /dev/console for /init before devtmpfs is mounted (only root can make the node; /init
# reopens its output on devtmpfs' console either way).
mknod -m 600 "$R/dev/console" c 5 1 2>/dev/null || true
ln -s usr/bin "$R/bin"
ln -s usr/sbin "$R/sbin"
ln -s usr/lib "$R/lib"
ln -s usr/lib64 "$R/lib64"

# In-root path of a host path: /bin/x, /sbin/x, /lib/x, /lib64/x all live under /usr in the guest.
inroot() {
	case "$1" in
	/usr/*) echo "$R$1" ;;
	*) echo "$R/usr$1" ;;
	esac
}
put() { # put HOSTPATH [GUESTPATH]
	dst=$(inroot "${2:-$1}")
	mkdir -p "$(dirname "$dst")"
	cp -L "$1" "$dst"
}
for t in $TOOLS; do put "$t"; done
for l in $LIBS; do put "$l"; done
for a in modprobe insmod rmmod lsmod modinfo depmod; do ln -s ../bin/kmod "$R/usr/sbin/$a"; done
# Busybox applets fill in everything else, never shadowing a real tool.
for a in $(/bin/busybox --list-full); do
	dst=$(inroot "/${a#usr/}")
	[ -e "$dst" ] || [ -L "$dst" ] || ln -s /usr/bin/busybox "$dst"
done
if [ "$HAVE_ERNICD" = yes ]; then
	put "$ERNICD" /usr/bin/ernicd
	chmod 755 "$R/usr/bin/ernicd"
fi
if [ -n "$ERNICD_B" ]; then
	put "$ERNICD_B" /usr/bin/ernicd-b
	chmod 755 "$R/usr/bin/ernicd-b"
fi
if [ -x "$ERNICCTL" ]; then
	put "$ERNICCTL" /usr/bin/ernicctl
	chmod 755 "$R/usr/bin/ernicctl"
fi
if [ -x "$RTT_TOOL" ]; then
	put "$RTT_TOOL" /usr/bin/tcp_rtt
	chmod 755 "$R/usr/bin/tcp_rtt"
fi
if [ "$HAVE_LOAD_TOOL" = yes ]; then
	put "$LOAD_TOOL" /usr/bin/nvmf_tcp_load
	chmod 755 "$R/usr/bin/nvmf_tcp_load"
fi
if [ -f "$ENGINE_SO" ]; then
	mkdir -p "$R/ernic/build"
	cp "$ENGINE_SO" "$R/ernic/build/ernic-fio.so"
fi
[ -d "$SUITES" ] || die "no $SUITES: the lane runs its job files"
cp -a "$SUITES" "$R/ernic/suites"
[ -f "$SUITES/integrity/ram-8m.fio" ] || die "no $SUITES/integrity/ram-8m.fio: the lane's integrity case"

echo /usr/lib/x86_64-linux-gnu >"$R/etc/ld.so.conf"
ldconfig -r "$R" || die "ldconfig -r $R failed"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
echo lane >"$R/etc/hostname"

MD=$R/usr/lib/modules/$KREL
mkdir -p "$MD"
for f in $MODFILES; do
	mkdir -p "$(dirname "$R/usr/$f")"
	cp "$KROOT/$f" "$R/usr/$f"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "$KROOT/lib/modules/$KREL/$f" ] && cp "$KROOT/lib/modules/$KREL/$f" "$MD/"
done
depmod -b "$R" "$KREL" || die "depmod failed on the initramfs root"

cp "$HERE/guest-init.sh" "$R/init"
chmod 755 "$R/init"
mkdir -p "$R/lane"
if [ -x "$RDMA_SGL_TOOL" ]; then
	put "$RDMA_SGL_TOOL" /usr/bin/nvmf_rdma_sgl
	chmod 755 "$R/usr/bin/nvmf_rdma_sgl"
fi
cp "$HERE"/phase-*.sh "$R/lane/"
put "$RXE_PROVIDER"
mkdir -p "$R/etc/libibverbs.d"
cp "$RXE_DRIVER" "$R/etc/libibverbs.d/"

(cd "$R" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet --reproducible -R 0:0) \
	>"$INITRD.tmp" || die "cpio failed"
mv "$INITRD.tmp" "$INITRD"
cp "$KDIR/vmlinux" "$OUT/vmlinux"
echo "$KREL" >"$OUT/kernel-release"
echo "$STAMP" >"$OUT/initramfs.stamp"
say "initramfs $(du -m "$INITRD" | cut -f1) MiB, $(echo "$MODFILES" | wc -w) modules, $(echo "$LIBS" | wc -w) libraries"
