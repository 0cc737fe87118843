#!/bin/busybox sh
# /init of the test initramfs (scripts/kernel-vm/build-initramfs.sh puts it there).
# Loads the boot modules, mounts the host's root read-only over virtio-9p (tag hostroot) under a
# tmpfs overlay, points /lib/modules/<kver> at the extracted Debian kernel tree (kt_modules=),
# mounts the results share (tag kvmout) at /kvm-out, and switch_roots into the overlay to run
# kt_init= (a host path). A real switch_root, not chroot: the kernel's usermode helper then runs
# the host's /sbin/modprobe, which the crypto self-tests need to autoload drbg/jitterentropy.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /mnt/lower /mnt/rw /mnt/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
    echo "kvm-init: $*" >/dev/console
    echo o >/proc/sysrq-trigger
    sleep 5
}

for module in $(cat /modules/load.list); do
    insmod "/modules/$module" 2>/dev/null || true
done

kt_modules=
kt_init=
for word in $(cat /proc/cmdline); do
    case "$word" in
        kt_modules=*) kt_modules=${word#kt_modules=} ;;
        kt_init=*) kt_init=${word#kt_init=} ;;
    esac
done
kver=$(uname -r)

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /mnt/lower || fail "cannot mount hostroot"
mount -t tmpfs -o mode=0755 tmpfs /mnt/rw || fail "cannot mount tmpfs"
mkdir -p /mnt/rw/upper /mnt/rw/work
mount -t overlay overlay -o lowerdir=/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work /mnt/root \
    || fail "cannot mount the overlay"

# /lib may be a symlink to usr/lib (merged /usr): resolve inside the new root.
mkdir -p /mnt/root/usr/lib/modules /mnt/root/kvm-out
if [ -L /mnt/root/lib ]; then moddir=/mnt/root/usr/lib/modules; else mkdir -p /mnt/root/lib/modules; moddir=/mnt/root/lib/modules; fi
rm -rf "$moddir/$kver"
ln -s "$kt_modules" "$moddir/$kver"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 kvmout /mnt/root/kvm-out || fail "cannot mount kvmout"

mount --move /proc /mnt/root/proc
mount --move /sys /mnt/root/sys
mount --move /dev /mnt/root/dev
exec switch_root /mnt/root /bin/bash "$kt_init"
fail "switch_root failed"
