#!/usr/bin/env python3
"""Makes the kernel forget every LE key of one adapter, as a reboot without bluetoothd would:
Load Identity Resolving Keys and Load Long Term Keys with empty lists on the management channel
(each replaces the kernel's whole list). The test then checks that gattclient gives the keys back
from its bond store when it starts.

Usage: mgmt_clear_keys.py INDEX    prints one line per command with its status; exit 0 when both
succeeded
"""
import select
import socket
import struct
import sys
import ctypes

AF_BLUETOOTH, BTPROTO_HCI, HCI_CHANNEL_CONTROL, HCI_DEV_NONE = 31, 1, 3, 0xFFFF
MGMT_OP_LOAD_LONG_TERM_KEYS, MGMT_OP_LOAD_IRKS = 0x0013, 0x0030
MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS = 0x0001, 0x0002


def request(sock, opcode, index, parameters):
    sock.send(struct.pack('<HHH', opcode, index, len(parameters)) + parameters)
    while True:
        readable, _, _ = select.select([sock], [], [], 5)
        if not readable:
            return None
        packet = sock.recv(1024)
        event, event_index, _ = struct.unpack_from('<HHH', packet)
        if event in (MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS) and event_index == index:
            answered, status = struct.unpack_from('<HB', packet, 6)
            if answered == opcode:
                return status


def main():
    index = int(sys.argv[1])
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, BTPROTO_HCI)
    libc = ctypes.CDLL('libc.so.6', use_errno=True)
    address = struct.pack('<HHH', AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
    if libc.bind(sock.fileno(), ctypes.create_string_buffer(address), len(address)) != 0:
        print(f'mgmt_clear_keys: bind: errno {ctypes.get_errno()}', flush=True)
        sys.exit(1)
    failed = False
    for name, opcode in (('Load IRKs', MGMT_OP_LOAD_IRKS), ('Load Long Term Keys', MGMT_OP_LOAD_LONG_TERM_KEYS)):
        status = request(sock, opcode, index, struct.pack('<H', 0))
        print(f'mgmt_clear_keys: hci{index}: {name} (none): status {status}', flush=True)
        failed = failed or status != 0
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
