#!/bin/bash
# PID 1 in the guest after switch_root (scripts/kernel-vm/init.sh): the minimum of a system
# (pts, /dev/fd, /run, /tmp stays the host's /tmp through the overlay), then the checks with a
# bound, then power off. Never returns.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
mkdir -p /dev/pts /dev/shm /run
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t tmpfs tmpfs /dev/shm 2>/dev/null
mount -t tmpfs tmpfs /run 2>/dev/null
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
ip link set lo up 2>/dev/null
hostname kvm-guest 2>/dev/null

. /kvm-out/env.sh
timeout -k 5 "${KVM_GUEST_TIMEOUT:-240}" /bin/bash "$KVM_SCRIPTS/guest-test.sh" >/kvm-out/guest.log 2>&1
echo "guest-test exit $?" >>/kvm-out/guest.log
sync
echo o >/proc/sysrq-trigger
sleep 30
