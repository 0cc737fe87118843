#!/usr/bin/env python3
"""The one part of a pairing agent the guest needs: on the kernel's management channel, answer
every User Confirmation Request (Just Works: the kernel asks user space, and bluetoothd's agent
would accept) with User Confirmation Reply. Without it, and without bluetoothd, a kernel-initiated
LE pairing waits for a reply until SMP times out.

Usage: mgmt_confirm.py [--lifetime S]    prints one line per request answered, then exits after S
"""
import ctypes
import select
import socket
import struct
import sys
import time

AF_BLUETOOTH, BTPROTO_HCI, HCI_CHANNEL_CONTROL, HCI_DEV_NONE = 31, 1, 3, 0xFFFF
MGMT_EV_USER_CONFIRM_REQUEST = 0x000F
MGMT_OP_USER_CONFIRM_REPLY = 0x001C


def main():
    lifetime = float(sys.argv[sys.argv.index('--lifetime') + 1]) if '--lifetime' in sys.argv else 60.0
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, BTPROTO_HCI)
    libc = ctypes.CDLL('libc.so.6', use_errno=True)
    address = struct.pack('<HHH', AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
    if libc.bind(sock.fileno(), ctypes.create_string_buffer(address), len(address)) != 0:
        errno = ctypes.get_errno()
        print(f'mgmt_confirm: bind: errno {errno}', flush=True)
        sys.exit(1)
    print('mgmt_confirm: listening', flush=True)
    end = time.monotonic() + lifetime
    while (left := end - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            break
        packet = sock.recv(1024)
        if len(packet) < 6:
            continue
        event, index, length = struct.unpack_from('<HHH', packet)
        if event != MGMT_EV_USER_CONFIRM_REQUEST or length < 12:
            continue
        peer, address_type, hint, value = packet[6:12], packet[12], packet[13], struct.unpack_from('<I', packet, 14)[0]
        sock.send(struct.pack('<HHH', MGMT_OP_USER_CONFIRM_REPLY, index, 7) + peer + bytes([address_type]))
        text = ':'.join(f'{b:02X}' for b in reversed(peer))
        print(f'mgmt_confirm: hci{index}: confirmed {text} type {address_type} hint {hint} value {value}', flush=True)


if __name__ == '__main__':
    main()
