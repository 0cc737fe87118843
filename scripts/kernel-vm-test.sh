#!/bin/bash
# The kernel Bluetooth path, end to end, in a qemu guest with Debian's kernel (issue 11).
#
# The host kernel needs no Bluetooth and there is no hardware: the guest runs Debian's stock
# kernel (linux-image-amd64, downloaded and extracted, never installed) under software emulation,
# mounts this machine's root filesystem read-only over virtio-9p (with a tmpfs overlay), creates
# three LE controllers with BlueZ's btvirt, serves a CC2650-like GATT database from Bumble on
# hci1 (HCI user channel), and runs the release gattclient built here against it:
#   1  scan on the kernel's raw HCI socket (text and --json)
#   2  services (exact database), read, write, subscribe over the kernel L2CAP ATT socket;
#      --record read back by `gattclient dump` and tshark
#   3  the same over hci-user:0 (whole user-space host), after a clear error while hci0 is up
#   3b hci0 prepared (powered, LE on) by our management-channel code, not btmgmt
#   4  `gattclient monitor` shows the ATT traffic of check 2
#   5  `gattclient peripheral sensortag` on hci2, read by BlueZ's gatttool on hci0
#   6  without privilege and capabilities: exit 77 and the capability named
#   7  --security medium: BT_SECURITY on the ATT socket, the kernel pairs and encrypts the link,
#      gattclient's own agent on the management channel answers and keeps the bond
#   8  an adapter powered off, and a dual-mode one with LE switched off: without CAP_NET_ADMIN
#      exit 69 saying what to run; as root gattclient switches LE on itself
#   9  another ATT client (BlueZ's gatttool, as bluetoothd would) holds the device: exit 69
#      naming it and the bluetoothctl line, and the holder keeps its link
#   10 Examples/central-peripheral on the library's front door: advertise on hci2, scan,
#      connect, read, write and be notified from hci0
#   11 pairing on hci0 without bluetoothd: unpair; automatic security (the kernel pairs for a value
#      that needs encryption, the keys land in --bonds and equal Bumble's); bonds; pair with the
#      bond (no SMP); the kernel's keys cleared, the read works again with the keys gattclient
#      loaded at start (no SMP); pair --force through Pair Device
#   12 `gattclient adapters`: every adapter as hciconfig and btmgmt see it (address, up, powered,
#      LE, no bluetoothd), and `--transport hci0 adapters` alone
#   13 link control and Enhanced ATT on hci0 are refused (exit 64, saying why and what to use)
#      rather than dropped: the kernel owns the link
#   +  no kernel crypto self-test failure (SMP depends on it)
# Results: one PASS/FAIL line each, then `N passed, M failed`; exit 0 only when nothing failed.
#
# Usage: scripts/kernel-vm-test.sh [--no-install] [--no-build] [--keep] [--timeout S]
#   --no-install  do not apt-get/pip install missing tools (fail instead)
#   --no-build    use the existing .build/release/gattclient
#   --keep        keep the results directory (printed) even when everything passed
#   --timeout S   hard bound on the guest (default 420 s of host time)
# Environment: KVM_CACHE (default ~/.cache/gattclient-kernel-vm: the extracted kernel),
#   KVM_OUT (results directory; default a new directory under ${TMPDIR:-/tmp}).
# Needs root (apt-get, and qemu's 9p passthrough with security_model=none).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
install=1 build=1 keep=0 vm_timeout=420
while [ $# -gt 0 ]; do
    case "$1" in
        --no-install) install=0 ;;
        --no-build) build=0 ;;
        --keep) keep=1 ;;
        --timeout) vm_timeout=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "kernel-vm-test: unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
started=$(date +%s)
say() { echo "kernel-vm-test [$(( $(date +%s) - started ))s]: $*"; }
die() { echo "kernel-vm-test: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (apt-get, qemu 9p passthrough of /)"

# --- host tools -----------------------------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
file -L "$(command -v busybox 2>/dev/null || echo /nonexistent)" 2>/dev/null | grep -q 'statically linked' || need+=(busybox-static)
command -v btmgmt >/dev/null && command -v gatttool >/dev/null && command -v btmon >/dev/null || need+=(bluez)
command -v btvirt >/dev/null || need+=(bluez-test-tools)
command -v modprobe >/dev/null && command -v depmod >/dev/null || need+=(kmod)
command -v tshark >/dev/null || need+=(tshark)
command -v file >/dev/null || need+=(file)
command -v setpriv >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
    [ $install = 1 ] || die "missing packages: ${need[*]}"
    say "apt-get install ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq || true
    timeout 600 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# A Python with Bumble (Debian's or pyenv's: the guest sees the same files).
python=
for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    [ -n "$candidate" ] || continue
    if "$candidate" -c 'import bumble' 2>/dev/null; then
        python=$("$candidate" -c 'import sys; print(sys.executable)'); break
    fi
done
if [ -z "$python" ]; then
    [ $install = 1 ] || die "no python3 with bumble (pip install bumble)"
    say "pip install bumble"
    python3 -m pip --version >/dev/null 2>&1 || timeout 600 apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
    timeout 600 python3 -m pip install -q bumble || timeout 600 python3 -m pip install -q --break-system-packages bumble
    python=$(python3 -c 'import sys; print(sys.executable)')
    "$python" -c 'import bumble' || die "bumble did not install"
fi

# --- Debian's kernel, extracted (not installed) ------------------------------------------------
cache=${KVM_CACHE:-$HOME/.cache/gattclient-kernel-vm}
mkdir -p "$cache"
package=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
if [ -z "$package" ]; then
    timeout 300 apt-get update -qq || true
    package=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
fi
[ -n "$package" ] || die "cannot resolve linux-image-amd64 (apt-get update?)"
kver=${package#linux-image-}
tree=$cache/$kver
if [ ! -f "$tree/lib/modules/$kver/modules.dep" ]; then
    say "downloading and extracting $package"
    rm -rf "$tree" "$cache"/*.deb
    (cd "$cache" && timeout 300 apt-get download -q "$package" 2>&1 | grep -v 'unsandboxed' || true)
    deb=$(ls "$cache"/"$package"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || die "apt-get download $package failed"
    mkdir -p "$tree.partial"
    dpkg-deb -x "$deb" "$tree.partial"
    depmod -b "$tree.partial" "$kver"
    rm -f "$deb"
    mv "$tree.partial" "$tree"
    # Older kernels from previous runs.
    find "$cache" -mindepth 1 -maxdepth 1 ! -name "$kver" -exec rm -rf {} +
fi
vmlinuz=$tree/boot/vmlinuz-$kver
[ -f "$vmlinuz" ] || die "no $vmlinuz"

# --- gattclient ------------------------------------------------------------------------------
if [ $build = 1 ]; then
    say "swift build -c release --product gattclient"
    (cd "$repo" && swift build -c release --product gattclient 2>&1 | tail -3)
fi
gattclient=$(cd "$repo" && swift build -c release --show-bin-path 2>/dev/null || echo "$repo/.build/release")/gattclient
[ -x "$gattclient" ] || die "no $gattclient (build failed?)"
# The library's examples, built as a user's package builds them (check 10).
if [ $build = 1 ]; then
    say "swift build -c release (Examples/)"
    (cd "$repo/Examples" && swift build -c release 2>&1 | tail -3)
fi
examples=$(cd "$repo/Examples" && swift build -c release --show-bin-path 2>/dev/null || echo "$repo/Examples/.build/release")

# --- results directory, initramfs ------------------------------------------------------------
out=${KVM_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kernel-vm-test.XXXXXX")}
mkdir -p "$out"
rm -f "$out"/results.txt "$out"/guest.log
initrd=$out/initramfs.cpio.gz
"$here/kernel-vm/build-initramfs.sh" "$tree" "$kver" "$initrd" >"$out/initramfs.log"
cat >"$out/env.sh" <<EOF
KVM_GATTCLIENT='$gattclient'
KVM_PYTHON='$python'
KVM_SCRIPTS='$here/kernel-vm'
KVM_EXAMPLES='$examples'
KVM_GUEST_TIMEOUT=$(( vm_timeout - 40 ))
EOF

# --- the VM ----------------------------------------------------------------------------------
# TCG (software emulation): /dev/kvm may open on CI runners and still hang the guest. One vCPU:
# two compete with qemu's I/O and 9p threads on a 2-core host and are slower.
say "booting $kver under qemu (TCG), bound ${vm_timeout}s; results in $out"
qemu_pid=
stop_qemu() {
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill "$qemu_pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$qemu_pid" 2>/dev/null || true
    fi
}
trap stop_qemu EXIT
trap 'stop_qemu; exit 130' INT TERM
qemu-system-x86_64 -accel tcg,thread=multi,tb-size=256 -cpu max -M pc -smp 1 -m 512 \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 quiet loglevel=4 kt_modules=$tree/lib/modules/$kver kt_init=$here/kernel-vm/guest-init.sh" \
    -device virtio-rng-pci \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$out,mount_tag=kvmout,security_model=none" \
    -serial "file:$out/console.log" &
qemu_pid=$!
deadline=$(( $(date +%s) + vm_timeout ))
while kill -0 "$qemu_pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        say "the guest did not finish within ${vm_timeout}s: stopping qemu"
        echo "FAIL vm-timeout: the guest did not power off within ${vm_timeout}s" >>"$out/results.txt"
        stop_qemu
        break
    fi
    sleep 1
done
wait "$qemu_pid" 2>/dev/null || true
qemu_pid=

# --- report ----------------------------------------------------------------------------------
[ -s "$out/results.txt" ] || echo "FAIL guest: no results (see $out/console.log and $out/guest.log)" >>"$out/results.txt"
cat "$out/results.txt"
passed=$(grep -c '^PASS' "$out/results.txt" || true)
failed=$(grep -c '^FAIL' "$out/results.txt" || true)
pending=$(grep -c '^PENDING' "$out/results.txt" || true)
say "finished in $(( $(date +%s) - started ))s"
echo "$passed passed, $failed failed$( [ "$pending" -gt 0 ] && echo ", $pending pending" )"
if [ "$failed" -gt 0 ] || [ $keep = 1 ]; then
    echo "artefacts: $out (guest.log, console.log, btmon.snoop, *.out/*.err)"
else
    rm -rf "$out"
fi
[ "$failed" = 0 ]
