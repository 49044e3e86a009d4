#!/bin/sh
# Install the Debian packages a group of targets needs, saying what is installed.
# Usage: ci/deps.sh GROUP...   (build engine suites lane blktests playbooks charts regress control browser workflows fuzz perf lint)
set -eu
pkgs=""
for group in "$@"; do
	case "$group" in
	build) pkgs="$pkgs gcc make libc6-dev libcunit1-dev libisal-dev librdmacm-dev libibverbs-dev ibverbs-providers" ;;
	engine) pkgs="$pkgs fio dpkg-dev debian-archive-keyring liburing-dev" ;;
	suites) pkgs="$pkgs fio jq python3" ;; # python3: suites/test-clients' ports
	lane) pkgs="$pkgs qemu-system-x86 busybox-static kmod cpio xz-utils nvme-cli fio jq iproute2" ;;
	blktests) pkgs="$pkgs gawk uuid-runtime xfsprogs e2fsprogs diffutils util-linux mount procps" ;;
	playbooks) pkgs="$pkgs ansible-core ansible-lint jq xz-utils fio systemd" ;;
	charts) pkgs="$pkgs gnuplot-nox" ;;
	regress) pkgs="$pkgs jq mawk locales" ;;
	control) pkgs="$pkgs jq python3" ;;
	browser) pkgs="$pkgs chromium" ;;
	workflows) pkgs="$pkgs yamllint make" ;;
	fuzz) pkgs="$pkgs clang-14 libfuzzer-14-dev libclang-rt-14-dev" ;;
	perf) pkgs="$pkgs linux-perf" ;;
	lint) pkgs="$pkgs shellcheck git" ;;
	*) echo "ci/deps.sh: unknown group '$group'" >&2; exit 2 ;;
	esac
done
missing=""
for p in $pkgs; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || case " $missing " in *" $p "*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
echo "ci/deps.sh: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
# Through env: sudo's env_reset would drop a variable set before it.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
