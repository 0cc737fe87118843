// CHCI: the thin C shim between Swift and the Linux kernel's Bluetooth sockets (BlueZ headers,
// libbluetooth).
//
// Why a shim at all: the kernel interface is made of things Swift cannot import cleanly —
// ioctl request numbers built with _IOR/_IOW macros (HCIGETDEVLIST, HCIDEVUP), flexible-array
// request structs (hci_dev_list_req), the hci_filter bit helpers of <bluetooth/hci_lib.h>
// (static inline with casts through void *), and socket addresses (sockaddr_hci, sockaddr_l2)
// that must be laid out exactly as the kernel expects. This header deliberately does NOT include
// the BlueZ headers: Swift sees only the plain structs and functions below, every symbol prefixed
// `chci_`, and chci.c checks with _Static_assert that our constants and layouts agree with BlueZ.
//
// Convention: every function returns a descriptor or another non-negative result on success and
// `-errno` on failure (never -1 with errno set), so Swift's Errno.retryingOnInterrupt can wrap it.
// Everything Swift can do itself (read, write, send, recv, close, poll, listen, fcntl) stays in
// Swift.
#ifndef CHCI_H
#define CHCI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Constants (mirrors of BlueZ values, checked against BlueZ in chci.c)

/// HCI socket channels (struct sockaddr_hci.hci_channel).
#define CHCI_CHANNEL_RAW 0u
#define CHCI_CHANNEL_USER 1u
#define CHCI_CHANNEL_MONITOR 2u
#define CHCI_CHANNEL_CONTROL 3u
/// The "no device" index: monitor and control (management) channels bind to it.
#define CHCI_DEV_NONE 0xFFFFu
/// The largest number of adapters the kernel reports in one HCIGETDEVLIST (HCI_MAX_DEV).
#define CHCI_MAX_ADAPTERS 16
/// Socket-level address types of an L2CAP LE socket (BDADDR_LE_PUBLIC / BDADDR_LE_RANDOM).
#define CHCI_ADDRESS_LE_PUBLIC 1u
#define CHCI_ADDRESS_LE_RANDOM 2u
/// The ATT fixed channel identifier.
#define CHCI_ATT_CID 4u
/// BT_SECURITY levels.
#define CHCI_SECURITY_SDP 0u
#define CHCI_SECURITY_LOW 1u
#define CHCI_SECURITY_MEDIUM 2u
#define CHCI_SECURITY_HIGH 3u
#define CHCI_SECURITY_FIPS 4u
/// Flag for the open functions: create the socket with O_NONBLOCK.
#define CHCI_NONBLOCK 1

// MARK: - Plain structs Swift relies on (layouts asserted below and in chci.c)

/// One adapter as HCIGETDEVINFO reports it, reduced to what callers need.
typedef struct chci_adapter {
    /// hci_dev_info.dev_id: the N of hciN.
    uint16_t index;
    /// hci_dev_info.type: the controller type in the low nibble (0 primary, 1 AMP), the bus in
    /// the high nibble (HCI_VIRTUAL 0, USB 1, PCCARD 2, UART 3, RS232 4, PCI 5, SDIO 6, ...).
    uint8_t type;
    /// Nonzero when the HCI_UP flag is set.
    uint8_t is_up;
    /// hci_dev_info.flags verbatim (bit numbers: HCI_UP 0, HCI_INIT 1, HCI_RUNNING 2, ... HCI_RAW 8).
    uint32_t flags;
    /// bdaddr_t as the kernel stores it: little-endian, least significant octet first.
    uint8_t address[6];
    /// "hci0", NUL-terminated (hci_dev_info.name is 8 bytes, not always terminated; we terminate).
    char name[10];
    uint16_t acl_mtu;
    uint16_t acl_packets;
} chci_adapter;

/// The raw-channel filter in the kernel's layout (struct hci_filter): a packet-type bitmap, a
/// 64-bit event bitmap, and an opcode (0 = any).
typedef struct chci_hci_filter {
    uint32_t type_mask;
    uint32_t event_mask[2];
    uint16_t opcode;
} chci_hci_filter;

_Static_assert(sizeof(chci_adapter) == 28, "chci_adapter layout");
_Static_assert(offsetof(chci_adapter, index) == 0, "chci_adapter.index");
_Static_assert(offsetof(chci_adapter, type) == 2, "chci_adapter.type");
_Static_assert(offsetof(chci_adapter, is_up) == 3, "chci_adapter.is_up");
_Static_assert(offsetof(chci_adapter, flags) == 4, "chci_adapter.flags");
_Static_assert(offsetof(chci_adapter, address) == 8, "chci_adapter.address");
_Static_assert(offsetof(chci_adapter, name) == 14, "chci_adapter.name");
_Static_assert(offsetof(chci_adapter, acl_mtu) == 24, "chci_adapter.acl_mtu");
_Static_assert(offsetof(chci_adapter, acl_packets) == 26, "chci_adapter.acl_packets");
_Static_assert(sizeof(chci_hci_filter) == 16, "chci_hci_filter layout");
_Static_assert(offsetof(chci_hci_filter, event_mask) == 4, "chci_hci_filter.event_mask");
_Static_assert(offsetof(chci_hci_filter, opcode) == 12, "chci_hci_filter.opcode");

// MARK: - Adapters

/// Lists the kernel's adapters into `out` (room for `capacity` entries). Exists because
/// HCIGETDEVLIST/HCIGETDEVINFO are _IOR macros and hci_dev_list_req has a flexible array member.
/// Returns the number of entries written (at most CHCI_MAX_ADAPTERS), or -errno
/// (-EAFNOSUPPORT when the kernel has no Bluetooth).
int chci_list_adapters(chci_adapter *out, int capacity);

/// Fills `out` for adapter `index` (HCIGETDEVINFO). Returns 0 or -errno (-ENODEV: no such adapter).
int chci_adapter_info(uint16_t index, chci_adapter *out);

/// Brings adapter `index` up (HCIDEVUP ioctl; needs CAP_NET_ADMIN). 0 or -errno; -EALREADY when it
/// is already up. Exists because HCIDEVUP is an _IOW macro the importer drops.
int chci_adapter_up(uint16_t index);

/// Brings adapter `index` down (HCIDEVDOWN ioctl; needs CAP_NET_ADMIN). 0 or -errno.
int chci_adapter_down(uint16_t index);

// MARK: - HCI sockets

/// Opens an HCI socket (close-on-exec; `flags` may hold CHCI_NONBLOCK) bound to `device` on
/// `channel` (CHCI_CHANNEL_*; monitor and control take CHCI_DEV_NONE). Exists because
/// sockaddr_hci comes from BlueZ's headers and the bind is the step whose errno matters
/// (EPERM without the capability, EBUSY for a user channel on an adapter that is up).
/// Returns the descriptor or -errno.
int chci_hci_open(uint16_t device, uint16_t channel, int flags);

/// Builds a raw-channel filter with libbluetooth's hci_filter_* helpers (the vendor packet type
/// 0xFF maps to bit 0; event codes wrap at 64 as the kernel does). `opcode` 0 accepts any opcode.
/// Pure function; exists because those helpers are static inline with pointer casts.
void chci_hci_filter_build(chci_hci_filter *out, const uint8_t *packet_types, size_t packet_type_count,
                           const uint8_t *events, size_t event_count, uint16_t opcode);

/// Installs `filter` on a raw-channel socket (setsockopt SOL_HCI/HCI_FILTER). 0 or -errno.
int chci_hci_set_filter(int fd, const chci_hci_filter *filter);

/// Reads the installed filter back (getsockopt SOL_HCI/HCI_FILTER). 0 or -errno.
int chci_hci_get_filter(int fd, chci_hci_filter *filter);

// MARK: - L2CAP LE sockets on the ATT fixed channel

/// Creates an L2CAP SOCK_SEQPACKET socket (close-on-exec; `flags` may hold CHCI_NONBLOCK) bound
/// to the local adapter `local_address` (6 octets, little-endian; all zero = any adapter) with
/// address type `local_type` (CHCI_ADDRESS_LE_PUBLIC/RANDOM) and l2_cid = 4 (ATT).
/// Exists because sockaddr_l2 and BDADDR_LE_* come from BlueZ. Returns the descriptor or -errno.
int chci_l2cap_le_socket(const uint8_t *local_address, uint8_t local_type, int flags);

/// Connects `fd` to `address` (6 octets, little-endian) of type `type` (CHCI_ADDRESS_LE_*) on
/// CID 4. 0 when connected, -EINPROGRESS on a non-blocking socket (wait until writable, then
/// call chci_socket_error), or -errno.
int chci_l2cap_connect(int fd, const uint8_t *address, uint8_t type);

/// Accepts one connection on a listening L2CAP socket; the new socket is close-on-exec and, with
/// CHCI_NONBLOCK in `flags`, non-blocking. Writes the peer's address (little-endian) and type
/// (CHCI_ADDRESS_LE_*). Returns the new descriptor or -errno (-EAGAIN on a non-blocking listener
/// with nothing pending).
int chci_l2cap_accept(int fd, uint8_t *peer_address, uint8_t *peer_type, int flags);

/// Sets BT_SECURITY (SOL_BLUETOOTH) to `level` (CHCI_SECURITY_*). 0 or -errno.
int chci_l2cap_set_security(int fd, uint8_t level);

/// Reads BT_SECURITY: the level (>= 0) or -errno.
int chci_l2cap_get_security(int fd);

/// Reads the channel's MTUs: BT_SNDMTU/BT_RCVMTU (SOL_BLUETOOTH), falling back to L2CAP_OPTIONS
/// (SOL_L2CAP) on kernels without them. 0 or -errno.
int chci_l2cap_get_mtu(int fd, uint16_t *send_mtu, uint16_t *receive_mtu);

/// Sets the receive MTU (BT_RCVMTU, falling back to L2CAP_OPTIONS imtu); call before connect.
/// The kernel drops incoming SDUs larger than it. 0 or -errno.
int chci_l2cap_set_receive_mtu(int fd, uint16_t mtu);

/// The outcome of a non-blocking connect once the socket is writable: getsockopt SO_ERROR folded
/// into this shim's convention (0 connected, -errno failed), so connect and its completion report
/// errors the same way.
int chci_socket_error(int fd);

#ifdef __cplusplus
}
#endif

#endif
