#!/bin/sh
# Usage: ernic-nvme-dev.sh NQN TRADDR TRSVCID [NSID]
#
# Prints the NVMe/TCP controller (nvmeN; ERNIC_TRANSPORT=rdma: NVMe/RDMA) the kernel has for subsystem NQN at
# TRADDR:TRSVCID and exits 0; exits 1 when there is none. With NSID, the
# controller must be live and namespace NSID's block device there, and the
# line is "nvmeN /dev/nvmeXnY". ERNIC_SYSFS and ERNIC_DEVFS (default /sys,
# /dev) let playbooks/tests/run.sh point it at a tree of its own.
set -eu
sys=${ERNIC_SYSFS:-/sys}
dev=${ERNIC_DEVFS:-/dev}
nqn=$1
traddr=$2
trsvcid=$3
nsid=${4:-}
transport=${ERNIC_TRANSPORT:-tcp}

ctrl=""
for d in "$sys"/class/nvme/nvme*; do
	[ -e "$d/subsysnqn" ] || continue
	[ "$(cat "$d/subsysnqn")" = "$nqn" ] || continue
	[ "$(cat "$d/transport" 2>/dev/null)" = "$transport" ] || continue
	case "$(cat "$d/address" 2>/dev/null)," in
	"traddr=$traddr,trsvcid=$trsvcid,"*) ctrl=$(basename "$d") ;;
	*) continue ;;
	esac
	break
done
[ -n "$ctrl" ] || exit 1
if [ -z "$nsid" ]; then
	echo "$ctrl"
	exit 0
fi
[ "$(cat "$sys/class/nvme/$ctrl/state" 2>/dev/null)" = live ] || exit 1

# With native multipath the block device is the subsystem's head (nvmeXnY);
# without it the namespace hangs off the controller.
for s in "$sys"/class/nvme-subsystem/nvme-subsys*; do
	[ -e "$s/$ctrl" ] || continue
	for b in "$s"/nvme*n*; do
		[ -e "$b/nsid" ] || continue
		[ "$(cat "$b/nsid")" = "$nsid" ] || continue
		[ -b "$dev/$(basename "$b")" ] || exit 1
		echo "$ctrl $dev/$(basename "$b")"
		exit 0
	done
done
for b in "$sys/class/nvme/$ctrl"/nvme*n*; do
	[ -e "$b/nsid" ] || continue
	[ "$(cat "$b/nsid")" = "$nsid" ] || continue
	[ -b "$dev/$(basename "$b")" ] || exit 1
	echo "$ctrl $dev/$(basename "$b")"
	exit 0
done
exit 1
