#!/usr/bin/env python3
"""A Bumble virtual controller and peripherals, for interoperability tests of our host.

Starts, on 127.0.0.1, a Bumble controller exposed as a raw H4 byte stream over TCP: the program
that connects is the Bluetooth host (one host at a time; each accepted connection gets a fresh
H4 parser). On the same virtual link, Bumble `Device`s act as advertising GATT peripherals:

  --device sensortag   a CC2650-SensorTag-like database (11 services, 32 characteristics,
                       26 descriptors), name only in the scan response
  --device bluefruit   an Adafruit Bluefruit LE UART: Nordic UART service, RX writes echoed
                       back as TX notifications
  --counters N         N counting sensors (random static addresses C1:00:00:00:00:01 and up,
                       named "Counter K"): the service C0DE0001-…, whose characteristic
                       C0DE0002-… notifies a 4-octet little-endian counter --counter-rate times a
                       second while notifications are on, counting what was sent (as our
                       emulator's `sim:counter`); `counts` and `stop-counters` on stdin
  --device secure      a peripheral that needs pairing: a value readable only encrypted, one
                       writable only authenticated; pairing as --pairing, --pairing-mitm,
                       --pairing-io, --passkey say; `PAIRING ...` lines on stdout tell each step
  --device profiles    "Bumble HR" (random static C2:00:00:00:00:0D): Bumble's own profile
                       servers (bumble.profiles) -- HeartRateService (measurement, body sensor
                       location CHEST, control point), BatteryService (level 87 until `battery`)
                       and DeviceInformationService (manufacturer "Bumble Labs", model "HR-1",
                       serial "SN-0042", hardware "1.0", firmware "2.3.4", software "5.6",
                       System ID OUI 0xABCDEF / manufacturer ID 0x0123456789; no PnP ID: the
                       installed Bumble's DeviceInformationService cannot serve one), after our
                       GAP and GATT services; advertises flags, the complete list of 16-bit
                       service UUIDs 0x180D 0x180F and the complete local name "Bumble HR";
                       `hr-notify`, `battery`, `hr-state` on stdin

The first line on stdout is `READY tcp:127.0.0.1:PORT`; then `DEVICE <kind> <ADDRESS>/<type>`
for each peripheral (the SensorTag advertises with a public address, the Bluefruit with a random
static one). Commands may be written to stdin, one a line, each answered in order by one
`RESULT ok ...` or `RESULT error ...` line on stdout (see `run_command`): `update KIND MIN MAX
LATENCY TIMEOUT` (L2CAP Connection Parameter Update Request from the peripheral), `ll-update
...` (the link-layer Connection Parameters Request procedure), `disconnect KIND [REASON]`;
for the profiles device `hr-notify profiles COUNT` (COUNT heart rate measurements encoded by
Bumble's HeartRateMeasurement: measurement n, counted across calls and connections, has heart
rate 60 + n % 100 in UINT8, sensor contact detected, the running energy expended -- 0 at start
and after a control point reset, +10 a measurement -- and one RR interval (1024 * 60) // rate
in 1/1024 s; answers `RESULT ok hr-notify COUNT FIRST_N`), `battery profiles LEVEL` (sets and
notifies the battery level; `RESULT ok battery LEVEL`), `battery-set profiles LEVEL` (sets it
silently, no connection needed), `hr-state profiles` (`RESULT ok hr-state next=N energy=E
resets=R`).
With `--central-port N` (0: any free port) a second controller on the same link, with public
address F0:F1:F2:F3:F4:F6, is exposed over TCP too, for a second host acting as central (for
example Bumble's own host in scripts/bumble_central.py, against our host as peripheral); its
address is announced after the DEVICE lines as `CENTRAL tcp:127.0.0.1:PORT`.
The process exits after `--lifetime` seconds (default 120) or when stdin closes, so it can
never outlive the test that started it. `--mtu N` limits the peripherals' ATT_MTU.

Deviations from stock Bumble (0.0.236), to behave more like real silicon:
  * unknown or unimplemented HCI commands are answered with status 0x01 (Unknown HCI Command)
    instead of silence (`--stock-unknown-commands` keeps stock silence for the asynchronous
    ones, LE Set PHY among them); malformed command parameters with 0x12;
  * controller-to-host ACL data is fragmented to the LE ACL buffer size (27 octets), and
    host-to-controller ACL packets longer than that buffer are refused (dropped, with a Data
    Buffer Overflow event), so a host that ignores LE Read Buffer Size fails visibly;
  * scanning reports follow the host's commands: legacy LE Advertising Reports after legacy
    scan commands, extended reports after extended ones, with the advertiser's real event type,
    and a scan response (carrying the advertiser's scan response data, not a copy of the
    advertising data) only when scanning actively and the advertiser is scannable;
  * HCI_Reset resets: scanning and advertising stop, a pending connection is dropped, LE
    connections are terminated towards the peer (no event to this host, as after a real reset),
    event masks return to their defaults;
  * LE Create Connection Cancel cancels (Command Complete, then LE Connection Complete with
    status 0x02), or answers Command Disallowed (0x0C) when nothing is pending;
  * Disconnect with an unknown handle answers Command Status 0x02 (Unknown Connection
    Identifier) instead of "pending" and silence;
  * the link routes LE ACL data by the sender's address *in that connection*, so a host using
    its public address is not silently dropped (stock LocalLink uses the random address);
  * Number Of Completed Packets is enforced on the exposed controller (`--acl-buffers`, default
    8): completions come a few milliseconds later, and a packet sent without a free buffer is
    dropped with Data Buffer Overflow;
  * a peripheral's LE Connection Update runs the Connection Parameters Request procedure: our
    host gets LE Remote Connection Parameter Request and its Reply / Negative Reply decides.

Usage: python3 scripts/bumble_peer.py [--port N] [--device sensortag] [--device bluefruit]
                                      [--device secure] [--device profiles] [--counters N]
                                      [--mtu N] [--acl-buffers N] [--extended-commands]
                                      [--lifetime S] [--verbose]
"""
import argparse
import asyncio
import secrets
import logging
import os
import struct
import sys

from bumble import att, core, hci, ll
from bumble.controller import Controller
from bumble.core import UUID, AdvertisingData
from bumble.device import Device, DeviceConfiguration
from bumble.gatt import (
    GATT_CHARACTERISTIC_USER_DESCRIPTION_DESCRIPTOR,
    GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR,
    Characteristic,
    CharacteristicValue,
    Descriptor,
    Service,
)
from bumble.host import Host
from bumble.keys import JsonKeyStore, MemoryKeyStore
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.profiles.battery_service import BatteryService
from bumble.profiles.device_information_service import DeviceInformationService
from bumble.profiles.heart_rate_service import HeartRateService

# The address our host's controller reports for Read BD_ADDR (a locally administered public
# address; the link fix below lets a host use it).
HOST_CONTROLLER_ADDRESS = 'F0:F1:F2:F3:F4:F5'
# The second exposed controller (`--central-port`).
CENTRAL_CONTROLLER_ADDRESS = 'F0:F1:F2:F3:F4:F6'
# The SensorTag advertises with a public address in TI's OUI (54:6C:0E), as a CC2650 does;
# the Bluefruit with a random static address (two most significant bits set), as the nRF51 does.
SENSORTAG_ADDRESS = '54:6C:0E:12:34:56'
BLUEFRUIT_ADDRESS = 'DE:AD:BE:EF:0B:F1'
SECURE_ADDRESS = 'F1:5E:C0:0E:00:01'
# The profiles device (Bumble's own Heart Rate, Battery and Device Information servers).
PROFILES_ADDRESS = 'C2:00:00:00:00:0D'
# The secure device's services: a Battery Level anyone may read, and a "Medical" value that needs
# an encrypted link to read and an authenticated one to write (the pairing tests' target).
SECURE_SERVICE = '0000FEE0-0000-1000-8000-00805F9B34FB'
SECURE_READ_ENCRYPTED = '0000FEE1-0000-1000-8000-00805F9B34FB'
SECURE_WRITE_AUTHENTICATED = '0000FEE2-0000-1000-8000-00805F9B34FB'
# Pairing as --pairing-* say (set in main()).
PAIRING = {'claim_identity': None, 'zero_irk': False,
           'sc': True, 'mitm': False, 'bonding': True, 'io': 'none', 'passkey': 123456, 'keystore': None,
           'privacy': False}
# --privacy: the secure device's IRK (it advertises with resolvable private addresses from it).
PRIVACY_IRK = bytes(range(0x10, 0x20))

TI_BASE = 'F000{:04X}-0451-4000-B000-000000000000'
NUS_SERVICE = '6E400001-B5A3-F393-E0A9-E50E24DCCA9E'
NUS_RX = '6E400002-B5A3-F393-E0A9-E50E24DCCA9E'
NUS_TX = '6E400003-B5A3-F393-E0A9-E50E24DCCA9E'

# H4 packet indicator -> (header length, offset of the length field, length field format)
H4_HEADERS = {
    hci.HCI_COMMAND_PACKET: (3, 2, '<B'),
    hci.HCI_ACL_DATA_PACKET: (4, 2, '<H'),
    hci.HCI_SYNCHRONOUS_DATA_PACKET: (3, 2, '<B'),
    hci.HCI_EVENT_PACKET: (2, 1, '<B'),
    hci.HCI_ISO_DATA_PACKET: (4, 2, '<H'),
}

log = logging.getLogger('bumble_peer')


# -----------------------------------------------------------------------------
# The link and the controller
# -----------------------------------------------------------------------------
class AddressFaithfulLink(LocalLink):
    """LocalLink that labels LE ACL data with the address the sender uses in that connection."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport != core.PhysicalTransport.LE:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        connection = sender_controller.le_connections.get(destination_address)
        destination = self.find_le_controller(destination_address)
        if connection is None or destination is None:
            log.warning('no LE route to %s', destination_address)
            return
        source = connection.self_address
        asyncio.get_running_loop().call_soon(
            lambda: destination.on_link_acl_data(source, transport, data)
        )


# Legacy advertising event types (LE Advertising Report) and their extended-report encodings
# (Core Spec 5.4, Vol 4, Part E, §7.7.65.2 and §7.7.65.13), from the advertising event
# properties bits: 0 connectable, 1 scannable, 2 directed, 4 legacy.
ADV_IND, ADV_DIRECT_IND, ADV_SCAN_IND, ADV_NONCONN_IND, SCAN_RSP = 0, 1, 2, 3, 4
EXTENDED_EVENT_TYPE = {ADV_IND: 0x13, ADV_DIRECT_IND: 0x15, ADV_SCAN_IND: 0x12, ADV_NONCONN_IND: 0x10}
LEGACY_PROPERTIES = {0: 0x13, 1: 0x1D, 2: 0x12, 3: 0x10, 4: 0x15}  # HCI Advertising_Type -> properties


def legacy_event_type(properties: int) -> int:
    if properties & 0x04:
        return ADV_DIRECT_IND
    if properties & 0x01:
        return ADV_IND
    if properties & 0x02:
        return ADV_SCAN_IND
    return ADV_NONCONN_IND


class StrictController(Controller):
    """A Bumble controller that answers every command, fragments ACL data to its buffer and
    reports advertising the way the host asked for it."""

    extended_scanning = False
    # --stock-unknown-commands: asynchronous commands Bumble does not implement (LE Set PHY)
    # get no answer at all, as from stock Bumble and some real controllers.
    stock_unknown_commands = False

    def on_packet(self, packet: bytes) -> None:
        if packet and packet[0] == hci.HCI_COMMAND_PACKET and len(packet) >= 4:
            try:
                command = hci.HCI_Command.from_bytes(packet)
            except Exception as error:  # Bumble's parsers raise various exception types.
                opcode = struct.unpack_from('<H', packet, 1)[0]
                log.info('malformed command 0x%04X: %s', opcode, error)
                self._complete_with_status(opcode, hci.HCI_ErrorCode.INVALID_HCI_COMMAND_PARAMETERS_ERROR)
                return
            self.on_hci_packet(command)
            return
        try:
            super().on_packet(packet)
        except Exception as error:
            log.warning('dropped a malformed packet from the host (%s): %s', packet.hex(), error)

    def on_hci_command_packet(self, command: hci.HCI_Command) -> None:
        handler = getattr(self, f'on_{command.name.lower()}', None)
        if handler is None:
            # Stock Bumble stays silent for unknown opcodes and for asynchronous commands it
            # does not implement; a host waiting for an answer would hang.
            code = hci.HCI_ErrorCode.UNKNOWN_HCI_COMMAND_ERROR
            if isinstance(command, hci.HCI_AsyncCommand):
                if self.stock_unknown_commands:
                    log.info('leaving %s unanswered (--stock-unknown-commands)', command.name)
                    return
                self._send_hci_command_status(code, command.op_code)
            else:
                self._complete_with_status(command.op_code, code)
            return
        super().on_hci_command_packet(command)

    def _complete_with_status(self, opcode: int, status: int) -> None:
        # Built by hand: a generic Command Complete whose return parameters are the status alone.
        parameters = struct.pack('<BHB', 1, opcode, status)
        self._send_raw(bytes([hci.HCI_EVENT_PACKET, hci.HCI_COMMAND_COMPLETE_EVENT, len(parameters)]) + parameters)

    def _send_raw(self, packet: bytes) -> None:
        if self.host:
            asyncio.get_running_loop().call_soon(self.host.on_packet, packet)

    # -- reset, connection control -----------------------------------------------------------

    def on_hci_reset_command(self, command):
        self.le_scan_enable = False
        self.extended_scanning = False
        self.pending_le_connection = None
        self.le_legacy_advertiser.stop()
        for advertising_set in self.advertising_sets.values():
            advertising_set.stop()
        self.advertising_sets.clear()
        for connection in list(self.le_connections.values()):
            # The peer sees the link drop; this host gets no event, as after a real reset.
            connection.send_ll_control_pdu(ll.TerminateInd(hci.HCI_ErrorCode.REMOTE_USER_TERMINATED_CONNECTION_ERROR))
            del self.le_connections[connection.peer_address]
        self.event_mask = 0x00001FFFFFFFFFFF
        self.le_event_mask = 0x1F
        return super().on_hci_reset_command(command)

    def on_hci_disconnect_command(self, command):
        handle = command.connection_handle
        if (self.find_le_connection_by_handle(handle) is None
                and self.find_classic_connection_by_handle(handle) is None
                and self.find_classic_sco_link_by_handle(handle) is None):
            self._send_hci_command_status(hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, command.op_code)
            return None
        return super().on_hci_disconnect_command(command)

    def on_hci_le_create_connection_cancel_command(self, command):
        pending = self.pending_le_connection
        if pending is None:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None
        status = hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR
        if isinstance(pending, hci.HCI_LE_Extended_Create_Connection_Command):
            # LE Enhanced Connection Complete [v1]: status then 29 octets of zeroes.
            parameters = bytes([hci.HCI_LE_ENHANCED_CONNECTION_COMPLETE_EVENT, status]) + bytes(29)
        else:
            # LE Connection Complete: status then 17 octets of zeroes.
            parameters = bytes([hci.HCI_LE_CONNECTION_COMPLETE_EVENT, status]) + bytes(17)
        event = bytes([hci.HCI_EVENT_PACKET, hci.HCI_LE_META_EVENT, len(parameters)]) + parameters
        # Scheduled now, so it follows the Command Complete Bumble sends when this returns.
        asyncio.get_running_loop().call_soon(self._send_raw, event)
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    # -- scanning ---------------------------------------------------------------------------

    def on_hci_le_set_scan_enable_command(self, command):
        self.extended_scanning = False
        return super().on_hci_le_set_scan_enable_command(command)

    def on_hci_le_set_extended_scan_enable_command(self, command):
        self.extended_scanning = True
        return super().on_hci_le_set_extended_scan_enable_command(command)

    def on_hci_le_set_extended_scan_parameters_command(self, command):
        # Stock Bumble drops the scan type of extended scanning; keep it (first PHY's).
        if command.scan_types:
            self.le_scan_type = command.scan_types[0]
        return super().on_hci_le_set_extended_scan_parameters_command(command)

    def advertiser_of(self, address):
        """(advertising event properties, scan response data) of the advertiser using address."""
        for controller in self.link.controllers:
            legacy = controller.le_legacy_advertiser
            if legacy.enabled and legacy.address == address:
                return LEGACY_PROPERTIES.get(legacy.advertising_type, 0x13), bytes(legacy.scan_response_data)
            for advertising_set in controller.advertising_sets.values():
                if advertising_set.enabled and advertising_set.address == address and advertising_set.parameters:
                    properties = int(advertising_set.parameters.advertising_event_properties)
                    return properties, bytes(advertising_set.scan_response_data)
        return 0x13, b''

    def on_advertising_pdu(self, pdu) -> None:
        if not self.le_scan_enable:
            return super().on_advertising_pdu(pdu)
        address = pdu.advertiser_address
        properties, scan_response = self.advertiser_of(address)
        event_type = legacy_event_type(properties)
        self.send_report(address, event_type, bytes(pdu.data), scan_response=False)
        if self.le_scan_type == 1 and properties & 0x02:
            self.send_report(address, event_type, scan_response, scan_response=True)
        # Let Bumble do the rest (connection creation, periodic sync) without its own reports.
        self.le_scan_enable = False
        try:
            super().on_advertising_pdu(pdu)
        finally:
            self.le_scan_enable = True

    def send_report(self, address, event_type, data, scan_response) -> None:
        rssi = (-50) & 0xFF
        address_bytes = bytes(address)  # little-endian, as on the wire
        if self.extended_scanning:
            if scan_response:
                extended_type = 0x1B if event_type == ADV_IND else 0x1A
            else:
                extended_type = EXTENDED_EVENT_TYPE[event_type]
            report = (struct.pack('<HB', extended_type, address.address_type) + address_bytes
                      + bytes([0x01, 0x00, 0xFF, 0x7F, rssi]) + struct.pack('<H', 0)
                      + bytes([0x00]) + bytes(6) + bytes([len(data)]) + data)
            parameters = bytes([hci.HCI_LE_EXTENDED_ADVERTISING_REPORT_EVENT, 1]) + report
        else:
            report = (bytes([SCAN_RSP if scan_response else event_type, address.address_type])
                      + address_bytes + bytes([len(data)]) + data + bytes([rssi]))
            parameters = bytes([hci.HCI_LE_ADVERTISING_REPORT_EVENT, 1]) + report
        self._send_raw(bytes([hci.HCI_EVENT_PACKET, hci.HCI_LE_META_EVENT, len(parameters)]) + parameters)

    # -- connection parameters ---------------------------------------------------------------

    # Stock Bumble applies a peripheral's LE Connection Update at once. A real link layer runs
    # the Connection Parameters Request procedure (Core Spec 5.4, Vol 6, Part B, §5.1.7): the
    # central's controller asks its host with LE Remote Connection Parameter Request and
    # applies the host's Reply, or rejects on a Negative Reply. Emulated here between the two
    # controllers of the link.
    remote_parameter_requests = None  # handle -> (requesting controller, its connection)

    def on_hci_le_connection_update_command(self, command):
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None or connection.role != hci.Role.PERIPHERAL:
            return super().on_hci_le_connection_update_command(command)
        central = self.link.find_le_controller(connection.peer_address)
        central_connection = central.le_connections.get(connection.self_address) if central else None
        if central_connection is None:
            self._send_hci_command_status(hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, command.op_code)
            return None
        self._send_hci_command_status(hci.HCI_COMMAND_STATUS_PENDING, command.op_code)
        central.remote_parameter_request(central_connection, self, connection, command)
        return None

    def remote_parameter_request(self, connection, requester, requester_connection, command) -> None:
        if self.remote_parameter_requests is None:
            self.remote_parameter_requests = {}
        self.remote_parameter_requests[connection.handle] = (requester, requester_connection)
        parameters = struct.pack('<BHHHHH', hci.HCI_LE_REMOTE_CONNECTION_PARAMETER_REQUEST_EVENT, connection.handle,
                                 command.connection_interval_min, command.connection_interval_max,
                                 command.max_latency, command.supervision_timeout)
        asyncio.get_running_loop().call_soon(
            self._send_raw, bytes([hci.HCI_EVENT_PACKET, hci.HCI_LE_META_EVENT, len(parameters)]) + parameters)

    def _take_parameter_request(self, handle):
        return (self.remote_parameter_requests or {}).pop(handle, None)

    def on_hci_le_remote_connection_parameter_request_reply_command(self, command):
        pending = self._take_parameter_request(command.connection_handle)
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if pending is None or connection is None:
            return hci.HCI_StatusAndConnectionHandleReturnParameters(
                hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, command.connection_handle)
        log.info('host accepted the peer parameters on 0x%04X', command.connection_handle)

        def apply():
            self.send_hci_packet(hci.HCI_LE_Connection_Update_Complete_Event(
                status=hci.HCI_ErrorCode.SUCCESS, connection_handle=connection.handle,
                connection_interval=command.interval_max, peripheral_latency=command.max_latency,
                supervision_timeout=command.timeout))
            connection.send_ll_control_pdu(ll.ConnectionUpdateInd(
                interval=command.interval_max, latency=command.max_latency, timeout=command.timeout))

        asyncio.get_running_loop().call_soon(apply)
        return hci.HCI_StatusAndConnectionHandleReturnParameters(hci.HCI_ErrorCode.SUCCESS, command.connection_handle)

    def on_hci_le_remote_connection_parameter_request_negative_reply_command(self, command):
        pending = self._take_parameter_request(command.connection_handle)
        if pending is None:
            return hci.HCI_StatusAndConnectionHandleReturnParameters(
                hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, command.connection_handle)
        requester, requester_connection = pending
        log.info('host refused the peer parameters on 0x%04X: 0x%02X', command.connection_handle, command.reason)

        def reject():
            requester.send_hci_packet(hci.HCI_LE_Connection_Update_Complete_Event(
                status=command.reason, connection_handle=requester_connection.handle,
                connection_interval=0, peripheral_latency=0, supervision_timeout=0))

        asyncio.get_running_loop().call_soon(reject)
        return hci.HCI_StatusAndConnectionHandleReturnParameters(hci.HCI_ErrorCode.SUCCESS, command.connection_handle)

    # -- ACL ---------------------------------------------------------------------------------

    # Host-to-controller flow control (Core Spec 5.4, Vol 4, Part E, §4.1.1), enforced on the
    # controller our host drives: a packet is held until its Number Of Completed Packets goes
    # out (a few milliseconds later, batched, as a controller does per connection event); a
    # packet sent with every buffer held is dropped with Data Buffer Overflow.
    enforce_flow_control = False
    completion_delay = 0.003
    acl_in_flight = 0
    pending_completions = None  # handle -> packets
    completions_scheduled = False

    def _buffer_overflow(self) -> None:
        # HCI_Data_Buffer_Overflow, Link_Type 0x01 (ACL).
        self._send_raw(bytes([hci.HCI_EVENT_PACKET, hci.HCI_DATA_BUFFER_OVERFLOW_EVENT, 1, 0x01]))

    def on_hci_acl_data_packet(self, packet) -> None:
        if len(packet.data) > self.le_acl_data_packet_length:
            log.error('host sent %d ACL octets, over the %d-octet buffer: dropped',
                      len(packet.data), self.le_acl_data_packet_length)
            self._buffer_overflow()
            return
        if not self.enforce_flow_control:
            return super().on_hci_acl_data_packet(packet)
        connection = self.find_connection_by_handle(packet.connection_handle)
        if connection is None:
            log.warning('ACL data for unknown handle 0x%04X', packet.connection_handle)
            return
        if self.acl_in_flight >= self.total_num_le_acl_data_packets:
            log.error('host sent an ACL packet with all %d buffers in use: dropped', self.acl_in_flight)
            self._buffer_overflow()
            return
        self.acl_in_flight += 1
        if self.pending_completions is None:
            self.pending_completions = {}
        self.pending_completions[packet.connection_handle] = self.pending_completions.get(packet.connection_handle, 0) + 1
        connection.assembler.feed_packet(packet)
        if not self.completions_scheduled:
            self.completions_scheduled = True
            asyncio.get_running_loop().call_later(self.completion_delay, self._complete_packets)

    def _complete_packets(self) -> None:
        self.completions_scheduled = False
        pending, self.pending_completions = self.pending_completions or {}, {}
        handles, counts = [], []
        for handle, count in pending.items():
            self.acl_in_flight -= count
            # Packets of a link that went down were flushed: no completion for them.
            if self.find_connection_by_handle(handle) is not None:
                handles.append(handle)
                counts.append(count)
        if handles:
            self.send_hci_packet(hci.HCI_Number_Of_Completed_Packets_Event(
                connection_handles=handles, num_completed_packets=counts))

    def on_link_acl_data(self, sender_address, transport, data) -> None:
        if transport != core.PhysicalTransport.LE:
            return super().on_link_acl_data(sender_address, transport, data)
        connection = self.le_connections.get(sender_address)
        if connection is None:
            log.warning('no connection for %s', sender_address)
            return
        size = self.le_acl_data_packet_length
        for offset in range(0, len(data), size):
            fragment = data[offset:offset + size]
            boundary = 0b10 if offset == 0 else 0b01  # first automatically-flushable / continuing
            header = struct.pack('<HH', connection.handle | (boundary << 12), len(fragment))
            self._send_raw(bytes([hci.HCI_ACL_DATA_PACKET]) + header + fragment)


# -----------------------------------------------------------------------------
# H4 over TCP
# -----------------------------------------------------------------------------
class H4Parser:
    """Splits an H4 byte stream into packets (indicator included)."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, data: bytes):
        self.buffer.extend(data)
        packets = []
        while self.buffer:
            info = H4_HEADERS.get(self.buffer[0])
            if info is None:
                raise ValueError(f'unknown H4 packet indicator 0x{self.buffer[0]:02X}')
            header_length, length_offset, length_format = info
            if len(self.buffer) < 1 + header_length:
                break
            body_length = struct.unpack_from(length_format, self.buffer, 1 + length_offset)[0]
            total = 1 + header_length + body_length
            if len(self.buffer) < total:
                break
            packets.append(bytes(self.buffer[:total]))
            del self.buffer[:total]
        return packets


class StreamSink:
    """The controller's host: writes every packet to the connected TCP stream."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer

    def on_packet(self, packet: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(packet)


async def serve_host(controller: Controller, reader, writer) -> None:
    peer = writer.get_extra_info('peername')
    log.info('host connected from %s', peer)
    if controller.host is not None:
        log.warning('a second host connected; the previous one no longer receives packets')
    sink = StreamSink(writer)
    controller.host = sink
    parser = H4Parser()
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            for packet in parser.feed(data):
                controller.on_packet(packet)
    except (ValueError, ConnectionError) as error:
        log.warning('closing the host stream: %s', error)
    except asyncio.CancelledError:
        # Shutdown (lifetime over or stdin closed) while a host is still connected: end
        # quietly; asyncio's stream callback would otherwise log the cancelled task.
        pass
    finally:
        if controller.host is sink:
            controller.host = None
        writer.close()
        log.info('host %s disconnected', peer)


# -----------------------------------------------------------------------------
# Peripherals
# -----------------------------------------------------------------------------
READ = Characteristic.Properties.READ
WRITE = Characteristic.Properties.WRITE
WRITE_NO_RESPONSE = Characteristic.Properties.WRITE_WITHOUT_RESPONSE
NOTIFY = Characteristic.Properties.NOTIFY
INDICATE = Characteristic.Properties.INDICATE
READABLE = Characteristic.READABLE
READ_WRITE = Characteristic.READABLE | Characteristic.WRITEABLE


def make_device(name: str, address: str, controller: Controller) -> Device:
    # A public-address device is given Bumble's default random address; it advertises with the
    # public one (its controller's BD_ADDR).
    config = DeviceConfiguration()
    config.name = name
    # We build GAP and GATT ourselves: Bumble's defaults add the 5.1 caching characteristics a
    # 4.x device such as the CC2650 does not have.
    config.gap_service_enabled = False
    config.gatt_service_enabled = False
    # Bumble's DeviceConfiguration defaults to an all-zero IRK ("this really must be changed"),
    # which it then distributes when pairing; our stack refuses that key (anyone could make an
    # address that resolves with it), so each device gets a random one, as real devices do.
    config.irk = secrets.token_bytes(16)
    host = Host(controller_source=controller, controller_sink=controller)
    return Device(name=name, address=hci.Address(address), config=config, host=host)


def uuid16(value: int) -> UUID:
    return UUID.from_16_bits(value)


def user_description(text: str) -> Descriptor:
    return Descriptor(GATT_CHARACTERISTIC_USER_DESCRIPTION_DESCRIPTOR, READABLE, text.encode())


def cccd(device: Device, characteristic: Characteristic) -> Descriptor:
    # The server's own CCCD value object, so subscriptions work; declared explicitly so that it
    # comes before the User Description, as in TI's firmware.
    return Descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, READ_WRITE,
                      device.gatt_server.make_descriptor_value(characteristic))


def gap_service(name: str, appearance: int, connection_parameters: bytes) -> Service:
    return Service(uuid16(0x1800), [
        Characteristic(uuid16(0x2A00), READ, READABLE, name.encode()),
        Characteristic(uuid16(0x2A01), READ, READABLE, struct.pack('<H', appearance)),
        Characteristic(uuid16(0x2A04), READ, READABLE, connection_parameters),
    ])


def gatt_service(device: Device) -> Service:
    service_changed = Characteristic(uuid16(0x2A05), INDICATE, READABLE, bytes(4))
    service_changed.descriptors = [cccd(device, service_changed)]
    return Service(uuid16(0x1801), [service_changed])


def add_sensortag(device: Device) -> dict:
    ti = lambda short: UUID(TI_BASE.format(short))
    characteristics = {}

    def data(short, size, description, uuid=None):
        characteristic = Characteristic(uuid or ti(short), READ | NOTIFY, READABLE, bytes(size))
        characteristic.descriptors = [cccd(device, characteristic), user_description(description)]
        characteristics[short] = characteristic
        return characteristic

    def rw(short, value, description):
        characteristic = Characteristic(ti(short), READ | WRITE, READ_WRITE, value,
                                        [user_description(description)])
        characteristics[short] = characteristic
        return characteristic

    def sensor(service, data_uuid, size, name, period_uuid, period):
        return Service(ti(service), [
            data(data_uuid, size, f'{name} Data'),
            rw(data_uuid + 1, b'\x00', f'{name} Conf.'),
            rw(period_uuid, bytes([period]), f'{name} Period'),
        ])

    battery = Characteristic(uuid16(0x2A19), READ | NOTIFY, READABLE, b'\x5c')
    battery.descriptors = [cccd(device, battery)]
    keys = data(0xFFE1, 1, 'Key Press State', uuid=uuid16(0xFFE1))

    device.add_services([
        # CC2650 preferred parameters: 100-200 ms interval, latency 0, timeout 10 s.
        gap_service('CC2650 SensorTag', 0x0000, struct.pack('<HHHH', 80, 160, 0, 1000)),
        gatt_service(device),
        Service(uuid16(0x180A), [
            Characteristic(uuid16(0x2A23), READ, READABLE, bytes.fromhex('56341200000e6c54')),
            Characteristic(uuid16(0x2A24), READ, READABLE, b'CC2650 SensorTag'),
            Characteristic(uuid16(0x2A25), READ, READABLE, b'N.A.'),
            Characteristic(uuid16(0x2A26), READ, READABLE, b'1.40 (Jun 21 2017)'),
            Characteristic(uuid16(0x2A27), READ, READABLE, b'PCB 1.2/1.3'),
            Characteristic(uuid16(0x2A28), READ, READABLE, b'N.A.'),
            Characteristic(uuid16(0x2A29), READ, READABLE, b'Texas Instruments'),
            Characteristic(uuid16(0x2A2A), READ, READABLE, bytes.fromhex('fe006578706572696d656e74616c')),
            Characteristic(uuid16(0x2A50), READ, READABLE, bytes.fromhex('010d0000001001')),
        ]),
        Service(uuid16(0x180F), [battery]),
        sensor(0xAA00, 0xAA01, 4, 'IR Temp.', 0xAA03, 100),
        sensor(0xAA20, 0xAA21, 4, 'Hum.', 0xAA23, 100),
        sensor(0xAA40, 0xAA41, 6, 'Barometer', 0xAA44, 100),
        sensor(0xAA70, 0xAA71, 2, 'Luxometer', 0xAA73, 80),
        Service(ti(0xAA80), [
            data(0xAA81, 18, 'Movement Data'),
            rw(0xAA82, b'\x00\x00', 'Movement Conf.'),
            rw(0xAA83, b'\x64', 'Movement Period'),
        ]),
        Service(ti(0xAA64), [
            rw(0xAA65, b'\x00', 'IO Data'),
            rw(0xAA66, b'\x00', 'IO Config'),
        ]),
        Service(uuid16(0xFFE0), [keys]),
    ])
    device.advertising_data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.TX_POWER_LEVEL, bytes([0x00])),
        (AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, struct.pack('<H', 0xAA80)),
    ]))
    device.scan_response_data = bytes(AdvertisingData([
        (AdvertisingData.COMPLETE_LOCAL_NAME, b'CC2650 SensorTag'),
    ]))
    return characteristics


def add_bluefruit(device: Device) -> None:
    tx = Characteristic(UUID(NUS_TX), NOTIFY, READABLE, b'')
    tx.descriptors = [cccd(device, tx)]

    def on_rx_write(connection, value):
        # Echo: split into notifications of at most ATT_MTU - 3 octets, as the nRF51 does.
        size = max(getattr(connection, 'att_mtu', 23) - 3, 1)
        chunks = [bytes(value[i:i + size]) for i in range(0, len(value), size)]

        async def echo():
            for chunk in chunks:
                await device.notify_subscriber(connection, tx, chunk)

        asyncio.get_running_loop().create_task(echo())

    def on_rx_read(connection):
        # RX is write-only: answer a read (Read By Type included) with Read Not Permitted, as
        # the nRF51 does, instead of Bumble's internal error (which leaves the request unanswered).
        raise att.ATT_Error(att.ErrorCode.READ_NOT_PERMITTED)

    rx = Characteristic(UUID(NUS_RX), WRITE | WRITE_NO_RESPONSE, Characteristic.WRITEABLE,
                        CharacteristicValue(read=on_rx_read, write=on_rx_write))
    device.add_services([
        gap_service('Adafruit Bluefruit LE', 0x0000, struct.pack('<HHHH', 16, 60, 0, 400)),
        gatt_service(device),
        Service(uuid16(0x180A), [
            Characteristic(uuid16(0x2A29), READ, READABLE, b'Adafruit Industries'),
            Characteristic(uuid16(0x2A24), READ, READABLE, b'BLEFRIEND32'),
            Characteristic(uuid16(0x2A26), READ, READABLE, b'0.8.1'),
            Characteristic(uuid16(0x2A28), READ, READABLE, b'S110 8.0.0, 0.2'),
        ]),
        Service(UUID(NUS_SERVICE), [tx, rx]),
    ])
    device.advertising_data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, UUID(NUS_SERVICE).to_bytes()),
    ]))
    device.scan_response_data = bytes(AdvertisingData([
        (AdvertisingData.COMPLETE_LOCAL_NAME, b'Adafruit Bluefruit LE'),
    ]))


COUNTER_SERVICE = 'C0DE0001-0000-4000-8000-00805F9B34FB'
COUNTER_CHARACTERISTIC = 'C0DE0002-0000-4000-8000-00805F9B34FB'


class CounterState:
    """What one counting device sent: `sent` notifications, the next value `next`."""

    def __init__(self):
        self.sent = 0
        self.next = 0
        self.stopped = False
        self.task = None


COUNTERS: dict = {}


def add_counter(device: Device, name: str, rate: float, state: CounterState) -> None:
    counter = Characteristic(UUID(COUNTER_CHARACTERISTIC), READ | NOTIFY, READABLE, bytes(4))
    counter.descriptors = [cccd(device, counter)]
    device.add_services([
        gap_service(name, 0x0500, struct.pack('<HHHH', 24, 40, 0, 400)),
        gatt_service(device),
        Service(UUID(COUNTER_SERVICE), [counter]),
    ])
    device.advertising_data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, UUID(COUNTER_SERVICE).to_bytes()),
    ]))
    device.scan_response_data = bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name.encode())]))

    async def run():
        loop = asyncio.get_running_loop()
        period = 1.0 / rate
        due = loop.time()
        while not state.stopped:
            due += period
            await asyncio.sleep(max(0.0, due - loop.time()))
            connection = peer_connection(device)
            if connection is None or state.stopped:
                break
            try:
                await device.notify_subscriber(connection, counter, state.next.to_bytes(4, 'little'))
            except Exception:  # the link went while sending: not sent
                break
            state.sent += 1
            state.next = (state.next + 1) & 0xFFFFFFFF
        state.task = None

    def on_subscription(_bearer, notify_enabled, _indicate_enabled):
        if notify_enabled and state.task is None and not state.stopped:
            state.task = asyncio.get_running_loop().create_task(run())
        elif not notify_enabled and state.task is not None:
            state.task.cancel()
            state.task = None

    counter.on('subscription', on_subscription)

    def on_connection(connection):
        def on_disconnection(_reason):
            if state.task is not None:
                state.task.cancel()
                state.task = None
        connection.on('disconnection', on_disconnection)

    device.on('connection', on_connection)


class ProfilesState:
    """The profiles device's values, kept across connections: the battery level, the number n of
    the next heart rate measurement, the running energy expended (kJ) the next one carries, how
    many times the control point reset it, and the last measurement sent (what a read returns)."""

    def __init__(self):
        self.level = 87
        self.next = 0
        self.energy = 0
        self.resets = 0
        self.current = None
        self.battery = None
        self.heart_rate = None


PROFILES = ProfilesState()


def heart_rate_measurement(number: int, energy: int) -> HeartRateService.HeartRateMeasurement:
    """Measurement `number`: rate 60 + number % 100 (UINT8), sensor contact detected, energy
    expended `energy` (saturated at 0xFFFF, as the spec says), one RR interval of one beat at that
    rate, (1024 * 60) // rate in 1/1024 s (Bumble takes seconds and encodes int(s * 1024))."""
    rate = 60 + number % 100
    return HeartRateService.HeartRateMeasurement(
        heart_rate=rate, sensor_contact_detected=True, energy_expended=min(energy, 0xFFFF),
        rr_intervals=[((1024 * 60) // rate) / 1024])


def add_profiles(device: Device) -> None:
    """Bumble's own standard profile servers, built with their constructors (bumble.profiles),
    after our GAP and GATT services. The installed Bumble's DeviceInformationService has no PnP ID
    parameter (a TODO there), so this device serves no PnP ID."""

    def read_battery_level(_connection):
        return PROFILES.level

    def read_heart_rate_measurement(_connection):
        return PROFILES.current or heart_rate_measurement(PROFILES.next, PROFILES.energy)

    def reset_energy_expended(_connection):
        PROFILES.energy = 0
        PROFILES.resets += 1

    PROFILES.heart_rate = HeartRateService(
        read_heart_rate_measurement=read_heart_rate_measurement,
        body_sensor_location=HeartRateService.BodySensorLocation.CHEST,
        reset_energy_expended=reset_energy_expended)
    PROFILES.battery = BatteryService(read_battery_level=read_battery_level)
    information = DeviceInformationService(
        manufacturer_name='Bumble Labs', model_number='HR-1', serial_number='SN-0042',
        hardware_revision='1.0', firmware_revision='2.3.4', software_revision='5.6',
        # (OUI, Manufacturer ID): octets 89 67 45 23 01 EF CD AB (manufacturer ID, then OUI, LE).
        system_id=(0xABCDEF, 0x0123456789))
    device.add_services([
        # Appearance 0x0341: Heart Rate Sensor, Heart Rate Belt.
        gap_service('Bumble HR', 0x0341, struct.pack('<HHHH', 16, 60, 0, 400)),
        gatt_service(device),
        PROFILES.heart_rate,
        PROFILES.battery,
        information,
    ])
    device.advertising_data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, struct.pack('<HH', 0x180D, 0x180F)),
        (AdvertisingData.COMPLETE_LOCAL_NAME, b'Bumble HR'),
    ]))
    device.scan_response_data = b''


# kind -> (name, address, address type, builder)
class FixedPairingDelegate(PairingDelegate):
    """Answers pairing as a device with fixed IO: displays or types PAIRING['passkey'], accepts
    numeric comparison, and prints each step as a `PAIRING ...` line on stdout for the tests."""

    IO = {
        'none': PairingDelegate.NO_OUTPUT_NO_INPUT,
        'display': PairingDelegate.DISPLAY_OUTPUT_ONLY,
        'keyboard': PairingDelegate.KEYBOARD_INPUT_ONLY,
        'yesno': PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
        'keyboard-display': PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
    }

    def __init__(self):
        super().__init__(io_capability=self.IO[PAIRING['io']])

    async def accept(self):
        return True

    async def confirm(self, auto=False):
        return True

    async def compare_numbers(self, number, digits):
        print(f'PAIRING compare {number:0{digits}d}', flush=True)
        return True

    async def get_number(self):
        print(f'PAIRING entered {PAIRING["passkey"]:06d}', flush=True)
        return PAIRING['passkey']

    async def generate_passkey(self):
        return PAIRING['passkey']

    async def display_number(self, number, digits):
        print(f'PAIRING display {number:0{digits}d}', flush=True)


def add_secure(device: Device) -> None:
    battery = Characteristic(uuid16(0x2A19), READ | NOTIFY, READABLE, bytes([77]))
    battery.descriptors = [cccd(device, battery)]
    encrypted = Characteristic(UUID(SECURE_READ_ENCRYPTED), READ, Characteristic.READ_REQUIRES_ENCRYPTION,
                               b'heart rate 72')
    authenticated = Characteristic(
        UUID(SECURE_WRITE_AUTHENTICATED), READ | WRITE,
        Characteristic.READ_REQUIRES_AUTHENTICATION | Characteristic.WRITE_REQUIRES_AUTHENTICATION, b'\x00')
    device.add_services([
        gap_service('Secure Sensor', 0x0000, struct.pack('<HHHH', 16, 60, 0, 400)),
        gatt_service(device),
        Service(uuid16(0x180F), [battery]),
        Service(UUID(SECURE_SERVICE), [encrypted, authenticated]),
    ])
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=PAIRING['sc'], mitm=PAIRING['mitm'], bonding=PAIRING['bonding'], delegate=FixedPairingDelegate(),
        identity_address_type=hci.Address.RANDOM_DEVICE_ADDRESS if PAIRING['privacy'] else None)
    if PAIRING['privacy']:
        # LE privacy: advertise with an RPA from PRIVACY_IRK (set at power-on, changed only by the
        # `new-rpa` command); pairing distributes the IRK and the static identity address.
        device.le_privacy_enabled = True
        device.irk = PRIVACY_IRK
        device.le_rpa_timeout = 0
    device.keystore = (JsonKeyStore(namespace=None, filename=PAIRING['keystore']) if PAIRING['keystore']
                       else MemoryKeyStore())

    if PAIRING['claim_identity']:
        claim_identity(PAIRING['claim_identity'])
    if PAIRING['zero_irk']:
        device.irk = bytes(16)
    report_pairing(device)


def claim_identity(text: str) -> None:
    """Hostile: Identity Address Information names `text` (ADDR/public|random), another device's
    identity, instead of ours (patches Bumble's smp.Session)."""
    from bumble import smp
    address, _, kind = text.partition('/')
    claimed = hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS if kind == 'random'
                          else hci.Address.PUBLIC_DEVICE_ADDRESS)

    def send_identity_address_command(session) -> None:
        session.send_command(smp.SMP_Identity_Address_Information_Command(
            addr_type=claimed.address_type, bd_addr=claimed))
    smp.Session.send_identity_address_command = send_identity_address_command


def report_pairing(device: Device) -> None:
    """Prints each link's pairing steps on stdout: `PAIRING done <keys>`, `PAIRING failed
    <reason>`, `PAIRING encrypted <0|1>` (the tests read them)."""
    def on_connection(connection):
        connection.on('pairing', lambda keys: print(f'PAIRING done {keys_line(keys)}', flush=True))
        connection.on('pairing_failure', lambda reason: print(f'PAIRING failed {int(reason)}', flush=True))
        connection.on('encryption_change', lambda *args: print(
            f'PAIRING encrypted {int(connection.encryption)}', flush=True))

    device.on('connection', on_connection)


def keys_line(keys) -> str:
    """What Bumble stored, for the tests to compare with ours (hex, PDU octet order). Bumble names
    a legacy LTK by the role that uses it to encrypt: `ltk_central` is the one the peripheral
    distributed (the central encrypts with it), `ltk_peripheral` the one the central distributed."""
    parts = []
    if keys.ltk is not None:
        parts.append(f'ltk={keys.ltk.value.hex()}')
    if keys.ltk_peripheral is not None:
        parts.append(f'ltk_peripheral={keys.ltk_peripheral.value.hex()} ediv={keys.ltk_peripheral.ediv} '
                     f'rand={keys.ltk_peripheral.rand.hex()}')
    if keys.ltk_central is not None:
        parts.append(f'ltk_central={keys.ltk_central.value.hex()} central_ediv={keys.ltk_central.ediv} '
                     f'central_rand={keys.ltk_central.rand.hex()}')
    if keys.irk is not None:
        parts.append(f'irk={keys.irk.value.hex()}')
    return ' '.join(parts)


DEVICES = {
    'sensortag': ('CC2650 SensorTag', SENSORTAG_ADDRESS, 'public', add_sensortag),
    'bluefruit': ('Adafruit Bluefruit LE', BLUEFRUIT_ADDRESS, 'random', add_bluefruit),
    'secure': ('Secure Sensor', SECURE_ADDRESS, 'random', add_secure),
    'profiles': ('Bumble HR', PROFILES_ADDRESS, 'random', add_profiles),
}


# -----------------------------------------------------------------------------
# Main
# -----------------------------------------------------------------------------
def peer_connection(device: Device):
    for connection in device.connections.values():
        return connection
    return None


# --eatt: ATT requests each device served, per bearer ("att" for the unenhanced bearer, else the
# enhanced channel's CID on the device's side), for the `bearers` command.
BEARER_REQUESTS: dict = {}


def serve_eatt(device: Device, kind: str, delay_ms: float) -> None:
    """Registers the device's EATT server (SPSM 0x0027; Bumble does not ask for encryption) and
    counts the requests each bearer carries; with `delay_ms`, every response leaves that much
    later (the same per-PDU delay on every bearer, as a slower link would give)."""
    server = device.gatt_server
    server.register_eatt()
    counts = BEARER_REQUESTS.setdefault(kind, {})
    original_on_pdu = server.on_gatt_pdu
    original_send = server.send_gatt_pdu

    def bearer_name(bearer) -> str:
        cid = getattr(bearer, 'source_cid', None)
        return 'att' if cid is None else f'0x{cid:04X}'

    def on_gatt_pdu(bearer, pdu):
        if pdu.op_code in att.ATT_REQUESTS:
            name = bearer_name(bearer)
            counts[name] = counts.get(name, 0) + 1
        original_on_pdu(bearer, pdu)

    def send_gatt_pdu(bearer, pdu: bytes):
        if delay_ms > 0:
            asyncio.get_running_loop().call_later(delay_ms / 1000, original_send, bearer, pdu)
        else:
            original_send(bearer, pdu)

    server.on_gatt_pdu = on_gatt_pdu
    server.send_gatt_pdu = send_gatt_pdu


async def run_command(line: str, devices: dict) -> str:
    """One stdin command; returns the RESULT line.

    bearers KIND                            (--eatt) `RESULT ok bearers att=N 0x0040=N …`: the
                                            ATT requests the device served on each bearer

    update KIND MIN MAX LATENCY TIMEOUT     the peripheral sends an L2CAP Connection Parameter
                                            Update Request (intervals in 1.25 ms, timeout in 10 ms)
    ll-update KIND MIN MAX LATENCY TIMEOUT  the peripheral asks its controller (HCI LE Connection
                                            Update), i.e. the link-layer Connection Parameters
                                            Request procedure towards our host
    disconnect KIND [REASON]                the peripheral disconnects (default 0x13)
    notify KIND HANDLE COUNT                COUNT notifications of the characteristic whose value
                                            is at HANDLE, as fast as the link takes them; value =
                                            the 4-octet big-endian sequence number (honours the CCCD)
    indicate KIND HANDLE COUNT              COUNT indications, each awaiting its confirmation
    forget KIND                             the peripheral deletes its bonds (it lost the bond)
    request-security KIND                   the peripheral sends an SMP Security Request
    new-rpa KIND                            (--privacy, no connection) a fresh resolvable private
                                            address from the IRK, advertised from now on
    counts                                  every counter's ADDRESS=SENT:NEXT
    stop-counters                           the counters stop notifying (their counts stay)
    hr-notify profiles COUNT                COUNT heart rate measurements notified one after the
                                            other (honours the CCCD), numbered on from the
                                            module's counter (see heart_rate_measurement; each
                                            carries the running energy, then adds 10):
                                            `RESULT ok hr-notify COUNT FIRST_N`
    battery profiles LEVEL                  sets the battery level (0...255; 0...100 are valid
                                            levels) and notifies it through Bumble's read
                                            callback: `RESULT ok battery LEVEL`
    battery-set profiles LEVEL              (no connection needed) sets it without notifying:
                                            what the next read returns
    hr-state profiles                       (no connection needed) `RESULT ok hr-state next=N
                                            energy=E resets=R`: the next measurement number, the
                                            energy it will carry, the control point's resets
    """
    words = line.split()
    if words == ['counts']:
        return 'RESULT ok counts ' + ' '.join(
            f'{address}={state.sent}:{state.next}' for address, state in COUNTERS.items())
    if words == ['stop-counters']:
        for state in COUNTERS.values():
            state.stopped = True
            if state.task is not None:
                state.task.cancel()
                state.task = None
        return 'RESULT ok stop-counters'

    if len(words) < 2 or words[1] not in devices:
        return f'RESULT error unknown command or device: {line}'
    verb, device = words[0], devices[words[1]]
    if verb == 'bearers' and len(words) == 2:
        counts = BEARER_REQUESTS.get(words[1], {})
        return 'RESULT ok bearers ' + ' '.join(f'{name}={count}' for name, count in sorted(counts.items()))
    if verb == 'new-rpa':
        return await new_rpa(device)
    if verb in ('hr-notify', 'battery', 'battery-set', 'hr-state') and words[1] != 'profiles':
        return f'RESULT error {verb} needs the profiles device: {line}'
    if verb == 'hr-state' and len(words) == 2:
        return f'RESULT ok hr-state next={PROFILES.next} energy={PROFILES.energy} resets={PROFILES.resets}'
    if verb == 'battery-set' and words[1] == 'profiles' and len(words) == 3:
        # The level changes silently (no notification): what the next read, on this link or the
        # next, returns.
        level = int(words[2], 0)
        if not 0 <= level <= 0xFF:
            return f'RESULT error bad arguments: {line}'
        PROFILES.level = level
        return f'RESULT ok battery-set {level}'
    connection = peer_connection(device)
    if connection is None:
        return f'RESULT error {words[1]} has no connection'
    try:
        if verb in ('update', 'll-update') and len(words) == 6:
            low, high, latency, timeout = (int(word, 0) for word in words[2:])
            await asyncio.wait_for(connection.update_parameters(
                low * 1.25, high * 1.25, latency, timeout * 10, use_l2cap=(verb == 'update')), 5)
            return f'RESULT ok {verb}'
        if verb in ('notify', 'indicate') and len(words) == 4:
            handle, count = int(words[2], 0), int(words[3], 0)
            attribute = device.gatt_server.get_attribute(handle)
            if attribute is None:
                return f'RESULT error no attribute at {handle:#06x}'
            for number in range(count):
                value = number.to_bytes(4, 'big')
                if verb == 'notify':
                    await device.notify_subscriber(connection, attribute, value)
                else:
                    await asyncio.wait_for(device.indicate_subscriber(connection, attribute, value), 10)
            return f'RESULT ok {verb} {count}'
        if verb == 'hr-notify' and len(words) == 3:
            count, first = int(words[2], 0), PROFILES.next
            if count < 0:
                return f'RESULT error bad arguments: {line}'
            characteristic = PROFILES.heart_rate.heart_rate_measurement_characteristic
            for _ in range(count):
                measurement = heart_rate_measurement(PROFILES.next, PROFILES.energy)
                # Counted before sending, so a control point reset while sending is not undone.
                PROFILES.current = measurement
                PROFILES.next += 1
                PROFILES.energy = min(PROFILES.energy + 10, 0xFFFF)
                # Encoded by Bumble's SerializableCharacteristicAdapter: bytes(measurement).
                await device.notify_subscriber(connection, characteristic, measurement)
            return f'RESULT ok hr-notify {count} {first}'
        if verb == 'battery' and len(words) == 3:
            level = int(words[2], 0)
            if not 0 <= level <= 0xFF:
                return f'RESULT error bad arguments: {line}'
            PROFILES.level = level
            # No value: Bumble reads it through the service's read callback and packs it.
            await device.notify_subscriber(connection, PROFILES.battery.battery_level_characteristic)
            return f'RESULT ok battery {level}'
        if verb == 'forget':
            # The peripheral loses its bonds (a factory reset): the next encryption finds no key.
            if device.keystore is not None:
                for name, _ in await device.keystore.get_all():
                    await device.keystore.delete(name)
            return 'RESULT ok forget'
        if verb == 'request-security':
            outcome = device.request_pairing(connection)
            if asyncio.iscoroutine(outcome) or isinstance(outcome, asyncio.Future):
                await asyncio.wait_for(outcome, 5)
            return 'RESULT ok request-security'
        if verb == 'disconnect':
            reason = int(words[2], 0) if len(words) > 2 else hci.HCI_ErrorCode.REMOTE_USER_TERMINATED_CONNECTION_ERROR
            # What the device counted as sent is on the air before the link goes: Bumble's host
            # queues ACL data behind the controller's credits while HCI_Disconnect goes at once,
            # so a notification just counted would be dropped with the link (seen under load).
            queue = device.host.le_acl_packet_queue or device.host.acl_packet_queue
            if queue is not None:
                try:
                    await asyncio.wait_for(queue.drain(connection.handle), 2)
                except (ValueError, asyncio.TimeoutError):
                    pass  # nothing sent on it yet, or not drained in 2 s: disconnect anyway
            await asyncio.wait_for(connection.disconnect(reason), 5)
            return 'RESULT ok disconnect'
    except Exception as error:  # Bumble raises protocol-specific exception types.
        return f'RESULT error {verb}: {type(error).__name__} {error}'
    return f'RESULT error bad arguments: {line}'


async def new_rpa(device: Device) -> str:
    """Advertises from a fresh RPA (Bumble's own update_rpa writes the old address to the
    controller): stop advertising, set the new random address, advertise again."""
    try:
        await device.stop_advertising()
        address = hci.Address.generate_private_address(device.irk)
        await device.send_command(hci.HCI_LE_Set_Random_Address_Command(random_address=address))
        device.random_address = address
        await device.start_advertising(own_address_type=hci.OwnAddressType.RANDOM, auto_restart=True)
        return f'RESULT ok new-rpa {address.to_string(with_type_qualifier=False)}'
    except Exception as error:  # Bumble raises protocol-specific exception types.
        return f'RESULT error new-rpa: {type(error).__name__} {error}'


async def stdin_closed(devices: dict) -> None:
    """Runs commands read from stdin (one a line, each answered by one RESULT line on stdout,
    in order); completes when stdin reaches end of file (the parent test went away)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    fd = sys.stdin.fileno()
    buffer = bytearray()
    commands: asyncio.Queue = asyncio.Queue()

    async def serve():
        while True:
            line = await commands.get()
            print(await run_command(line, devices), flush=True)

    server = loop.create_task(serve())

    def readable():
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b''
        buffer.extend(data)
        while b'\n' in buffer:
            line, _, rest = bytes(buffer).partition(b'\n')
            buffer[:] = rest
            if line.strip():
                commands.put_nowait(line.decode(errors='replace').strip())
        if not data and not done.done():
            loop.remove_reader(fd)
            server.cancel()
            done.set_result(None)

    try:
        loop.add_reader(fd, readable)
    except (OSError, ValueError, NotImplementedError):
        # stdin is a regular file or /dev/null: nothing to watch, rely on the lifetime.
        await asyncio.Event().wait()
    await done


async def run(arguments) -> None:
    link = AddressFaithfulLink()
    host_controller = StrictController('host', link=link, public_address=HOST_CONTROLLER_ADDRESS)
    host_controller.enforce_flow_control = True
    host_controller.total_num_le_acl_data_packets = arguments.acl_buffers
    host_controller.stock_unknown_commands = arguments.stock_unknown_commands
    if arguments.extended_commands:
        # Stock Bumble implements these but does not claim them in Read Local Supported Commands.
        host_controller.supported_commands = set(host_controller.supported_commands) | {
            hci.HCI_LE_SET_EXTENDED_SCAN_PARAMETERS_COMMAND,
            hci.HCI_LE_SET_EXTENDED_SCAN_ENABLE_COMMAND,
            hci.HCI_LE_EXTENDED_CREATE_CONNECTION_COMMAND,
        }

    devices = []
    for kind in arguments.device:
        name, address, address_type, build = DEVICES[kind]
        if address_type == 'public':
            controller = StrictController(kind, link=link, public_address=address)
            device = make_device(name, 'C0:00:00:00:00:01' if kind == 'sensortag' else 'C0:00:00:00:00:02',
                                 controller)
        else:
            controller = StrictController(kind, link=link)
            device = make_device(name, address, controller)
        build(device)
        device.gatt_server.max_mtu = arguments.mtu
        if arguments.eatt:
            serve_eatt(device, kind, arguments.att_delay)
        devices.append((kind, address_type, device))
    for number in range(1, arguments.counters + 1):
        address = f'C1:00:00:00:{number >> 8:02X}:{number & 0xFF:02X}'
        controller = StrictController(f'counter-{number}', link=link)
        device = make_device(f'Counter {number}', address, controller)
        state = CounterState()
        COUNTERS[address] = state
        add_counter(device, f'Counter {number}', arguments.counter_rate, state)
        device.gatt_server.max_mtu = arguments.mtu
        devices.append((f'counter-{number}', 'random', device))

    server = await asyncio.start_server(
        lambda reader, writer: serve_host(host_controller, reader, writer),
        host='127.0.0.1', port=arguments.port)
    port = server.sockets[0].getsockname()[1]

    central_server = None
    if arguments.central_port is not None:
        central_controller = StrictController('central', link=link, public_address=CENTRAL_CONTROLLER_ADDRESS)
        central_server = await asyncio.start_server(
            lambda reader, writer: serve_host(central_controller, reader, writer),
            host='127.0.0.1', port=arguments.central_port)

    for kind, address_type, device in devices:
        await device.power_on()
        own = hci.OwnAddressType.PUBLIC if address_type == 'public' else hci.OwnAddressType.RANDOM
        await device.start_advertising(own_address_type=own, auto_restart=True)

    print(f'READY tcp:127.0.0.1:{port}', flush=True)
    for kind, address_type, device in devices:
        address = device.public_address if address_type == 'public' else device.random_address
        # Under --privacy: the identity (what pairing distributes); PRIVATE, after every DEVICE
        # line, gives the resolvable private address it advertises with.
        address = device.static_address if device.le_privacy_enabled else address
        print(f'DEVICE {kind} {address.to_string(with_type_qualifier=False)}/{address_type}', flush=True)
    for kind, address_type, device in devices:
        if device.le_privacy_enabled:
            print(f'PRIVATE {kind} {device.random_address.to_string(with_type_qualifier=False)}/random', flush=True)
    if central_server is not None:
        print(f'CENTRAL tcp:127.0.0.1:{central_server.sockets[0].getsockname()[1]}', flush=True)

    waiters = [asyncio.ensure_future(asyncio.sleep(arguments.lifetime))]
    if not arguments.ignore_stdin:
        waiters.append(asyncio.ensure_future(stdin_closed({kind: device for kind, _, device in devices})))
    done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in pending:
        waiter.cancel()
    log.info('exiting: %s', 'lifetime over' if waiters[0] in done else 'stdin closed')
    server.close()
    if central_server is not None:
        central_server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--port', type=int, default=0, help='TCP port (default: any free port)')
    parser.add_argument('--device', action='append', choices=sorted(DEVICES), default=[],
                        help='a peripheral to put on the link (repeatable)')
    parser.add_argument('--counters', type=int, default=0, help='counting sensors to put on the link (0...200)')
    parser.add_argument('--counter-rate', type=float, default=20.0,
                        help='notifications a second of each counter (default 20)')
    parser.add_argument('--lifetime', type=float, default=120.0,
                        help='exit after this many seconds (default 120)')
    parser.add_argument('--ignore-stdin', action='store_true',
                        help='do not exit when stdin closes (for interactive use)')
    parser.add_argument('--mtu', type=int, default=517,
                        help='the peripherals\' ATT_MTU limit in Exchange MTU (23...517, default 517)')
    parser.add_argument('--acl-buffers', type=int, default=8,
                        help='LE ACL buffers of the exposed controller (flow control enforced, default 8)')
    parser.add_argument('--extended-commands', action='store_true',
                        help='the exposed controller claims the extended scanning and initiating commands')
    parser.add_argument('--central-port', type=int, default=None,
                        help='also expose a second controller (a central for another host) on this TCP port (0: any)')
    parser.add_argument('--pairing', choices=['sc', 'legacy'], default='sc',
                        help='the secure device pairs with Secure Connections (default) or legacy only')
    parser.add_argument('--pairing-mitm', action='store_true', help='the secure device asks for MITM protection')
    parser.add_argument('--pairing-io', choices=sorted(FixedPairingDelegate.IO), default='none',
                        help='the secure device\'s IO capability (default none)')
    parser.add_argument('--passkey', type=int, default=123456, help='the passkey it displays or types')
    parser.add_argument('--keystore', default=None, help='a JSON key store file for the secure device')
    parser.add_argument('--claim-identity', default=None,
                        help='hostile: the secure device distributes this identity (ADDR/public|random), another device\'s')
    parser.add_argument('--zero-irk', action='store_true', help='hostile: the secure device distributes an all-zero IRK')
    parser.add_argument('--privacy', action='store_true',
                        help='the secure device advertises with resolvable private addresses (LE privacy)')
    parser.add_argument('--eatt', action='store_true',
                        help='the devices serve Enhanced ATT bearers (SPSM 0x0027); `bearers KIND` counts requests per bearer')
    parser.add_argument('--att-delay', type=float, default=0.0,
                        help='with --eatt: every ATT response leaves this many milliseconds later')
    parser.add_argument('--stock-unknown-commands', action='store_true',
                        help='leave asynchronous commands Bumble does not implement (LE Set PHY) unanswered, as stock Bumble does')
    parser.add_argument('--verbose', action='store_true', help='log to stderr')
    arguments = parser.parse_args()
    PAIRING.update(sc=arguments.pairing == 'sc', mitm=arguments.pairing_mitm, io=arguments.pairing_io,
                   passkey=arguments.passkey, keystore=arguments.keystore, privacy=arguments.privacy,
                   claim_identity=arguments.claim_identity, zero_irk=arguments.zero_irk)
    if not 23 <= arguments.mtu <= 517:
        parser.error('--mtu must be within 23...517')
    if not 0 <= arguments.counters <= 200 or not 0 < arguments.counter_rate <= 1000:
        parser.error('--counters must be within 0...200 and --counter-rate within (0, 1000]')
    if arguments.acl_buffers < 1:
        parser.error('--acl-buffers must be at least 1')
    logging.basicConfig(level=logging.DEBUG if arguments.verbose else logging.WARNING,
                        stream=sys.stderr)
    try:
        asyncio.run(run(arguments))
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
