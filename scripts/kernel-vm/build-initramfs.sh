#!/bin/bash
# Builds the test initramfs: static busybox, scripts/kernel-vm/init.sh as /init, and the boot
# modules (virtio PCI, 9p over virtio, overlay, virtio-rng) with their dependencies, in load order.
# Usage: build-initramfs.sh KERNEL_ROOT KVER OUTPUT.cpio.gz
#   KERNEL_ROOT: where linux-image-KVER was extracted (holds lib/modules/KVER with modules.dep)
set -euo pipefail
root=$1 kver=$2 output=$3
here=$(cd "$(dirname "$0")" && pwd)
busybox=$(command -v busybox)
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || {
    echo "build-initramfs: $busybox is not static (apt-get install busybox-static)" >&2; exit 1; }

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging"/{bin,modules,proc,sys,dev,mnt}
cp "$busybox" "$staging/bin/busybox"
cp "$here/init.sh" "$staging/init"
chmod 755 "$staging/init" "$staging/bin/busybox"

: >"$staging/modules/load.list"
for module in virtio_pci 9pnet_virtio 9p overlay virtio_rng; do
    modprobe -d "$root" -S "$kver" --show-depends "$module" | while read -r verb path _; do
        [ "$verb" = insmod ] || continue
        name=$(basename "$path")
        grep -qx "$name" "$staging/modules/load.list" && continue
        case "$path" in
            *.ko.xz) xz -dc "$path" >"$staging/modules/${name%.xz}"; name=${name%.xz} ;;
            *.ko.zst) zstd -qdc "$path" >"$staging/modules/${name%.zst}"; name=${name%.zst} ;;
            *) cp "$path" "$staging/modules/$name" ;;
        esac
        echo "$name" >>"$staging/modules/load.list"
    done
done
(cd "$staging" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$output"
echo "initramfs: $(du -h "$output" | cut -f1), modules: $(tr '\n' ' ' <"$staging/modules/load.list")"
