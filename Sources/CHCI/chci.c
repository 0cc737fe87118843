// The kernel HCI/L2CAP shim: see include/chci.h for why each function exists.
#define _GNU_SOURCE
#include "chci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

// Our mirrors of BlueZ constants must agree with BlueZ.
_Static_assert(CHCI_CHANNEL_RAW == HCI_CHANNEL_RAW, "HCI_CHANNEL_RAW");
_Static_assert(CHCI_CHANNEL_USER == HCI_CHANNEL_USER, "HCI_CHANNEL_USER");
_Static_assert(CHCI_CHANNEL_MONITOR == HCI_CHANNEL_MONITOR, "HCI_CHANNEL_MONITOR");
_Static_assert(CHCI_CHANNEL_CONTROL == HCI_CHANNEL_CONTROL, "HCI_CHANNEL_CONTROL");
_Static_assert(CHCI_DEV_NONE == HCI_DEV_NONE, "HCI_DEV_NONE");
_Static_assert(CHCI_MAX_ADAPTERS == HCI_MAX_DEV, "HCI_MAX_DEV");
_Static_assert(CHCI_ADDRESS_LE_PUBLIC == BDADDR_LE_PUBLIC, "BDADDR_LE_PUBLIC");
_Static_assert(CHCI_ADDRESS_LE_RANDOM == BDADDR_LE_RANDOM, "BDADDR_LE_RANDOM");
_Static_assert(CHCI_SECURITY_SDP == BT_SECURITY_SDP, "BT_SECURITY_SDP");
_Static_assert(CHCI_SECURITY_LOW == BT_SECURITY_LOW, "BT_SECURITY_LOW");
_Static_assert(CHCI_SECURITY_MEDIUM == BT_SECURITY_MEDIUM, "BT_SECURITY_MEDIUM");
_Static_assert(CHCI_SECURITY_HIGH == BT_SECURITY_HIGH, "BT_SECURITY_HIGH");
_Static_assert(CHCI_SECURITY_FIPS == BT_SECURITY_FIPS, "BT_SECURITY_FIPS");

// The kernel layouts we hand to setsockopt/bind/ioctl (include/uapi and net/bluetooth).
_Static_assert(sizeof(bdaddr_t) == 6, "bdaddr_t is 6 packed octets");
_Static_assert(sizeof(struct hci_filter) == sizeof(chci_hci_filter), "hci_filter size");
_Static_assert(offsetof(struct hci_filter, type_mask) == offsetof(chci_hci_filter, type_mask), "hci_filter.type_mask");
_Static_assert(offsetof(struct hci_filter, event_mask) == offsetof(chci_hci_filter, event_mask), "hci_filter.event_mask");
_Static_assert(offsetof(struct hci_filter, opcode) == offsetof(chci_hci_filter, opcode), "hci_filter.opcode");
_Static_assert(sizeof(struct sockaddr_hci) == 6, "sockaddr_hci");
_Static_assert(sizeof(struct sockaddr_l2) == 14, "sockaddr_l2");
_Static_assert(offsetof(struct sockaddr_l2, l2_bdaddr) == 4, "sockaddr_l2.l2_bdaddr");
_Static_assert(offsetof(struct sockaddr_l2, l2_cid) == 10, "sockaddr_l2.l2_cid");
_Static_assert(offsetof(struct sockaddr_l2, l2_bdaddr_type) == 12, "sockaddr_l2.l2_bdaddr_type");
_Static_assert(sizeof(struct hci_dev_req) == 8, "hci_dev_req");
_Static_assert(offsetof(struct hci_dev_info, bdaddr) == 10, "hci_dev_info.bdaddr");
_Static_assert(offsetof(struct hci_dev_info, flags) == 16, "hci_dev_info.flags");
_Static_assert(sizeof(struct bt_security) == 2, "bt_security");
_Static_assert(sizeof(((chci_adapter *)0)->name) > sizeof(((struct hci_dev_info *)0)->name), "room for NUL");

static int chci_socket_flags(int flags) {
    return SOCK_CLOEXEC | ((flags & CHCI_NONBLOCK) ? SOCK_NONBLOCK : 0);
}

// Closes `fd` keeping the errno that made us give up.
static int chci_fail_closing(int fd, int error) {
    close(fd);
    return -error;
}

static int chci_control_socket(void) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    return fd < 0 ? -errno : fd;
}

static void chci_adapter_from_info(const struct hci_dev_info *info, chci_adapter *out) {
    memset(out, 0, sizeof(*out));
    out->index = info->dev_id;
    out->type = info->type;
    out->flags = info->flags;
    out->is_up = (info->flags & (1u << HCI_UP)) ? 1 : 0;
    memcpy(out->address, &info->bdaddr, 6);
    memcpy(out->name, info->name, sizeof(info->name));
    out->name[sizeof(info->name)] = '\0';
    out->acl_mtu = info->acl_mtu;
    out->acl_packets = info->acl_pkts;
}

static int chci_ioctl_retrying(int fd, unsigned long request, void *argument) {
    int result;
    do {
        result = ioctl(fd, request, argument);
    } while (result < 0 && errno == EINTR);
    return result < 0 ? -errno : result;
}

static int chci_info_on(int fd, uint16_t index, chci_adapter *out) {
    struct hci_dev_info info;
    memset(&info, 0, sizeof(info));
    info.dev_id = index;
    int result = chci_ioctl_retrying(fd, HCIGETDEVINFO, &info);
    if (result < 0) return result;
    chci_adapter_from_info(&info, out);
    return 0;
}

int chci_list_adapters(chci_adapter *out, int capacity) {
    if (capacity < 0 || (capacity > 0 && out == NULL)) return -EINVAL;
    int fd = chci_control_socket();
    if (fd < 0) return fd;

    size_t size = sizeof(struct hci_dev_list_req) + HCI_MAX_DEV * sizeof(struct hci_dev_req);
    struct hci_dev_list_req *list = calloc(1, size);
    if (list == NULL) return chci_fail_closing(fd, ENOMEM);
    list->dev_num = HCI_MAX_DEV;

    int result = chci_ioctl_retrying(fd, HCIGETDEVLIST, list);
    if (result < 0) {
        free(list);
        return chci_fail_closing(fd, -result);
    }
    int written = 0;
    for (int i = 0; i < list->dev_num && i < HCI_MAX_DEV && written < capacity; i++) {
        int info = chci_info_on(fd, list->dev_req[i].dev_id, &out[written]);
        // An adapter removed between the two ioctls is skipped, not an error.
        if (info == -ENODEV) continue;
        if (info < 0) {
            free(list);
            return chci_fail_closing(fd, -info);
        }
        written++;
    }
    free(list);
    close(fd);
    return written;
}

int chci_adapter_info(uint16_t index, chci_adapter *out) {
    if (out == NULL) return -EINVAL;
    int fd = chci_control_socket();
    if (fd < 0) return fd;
    int result = chci_info_on(fd, index, out);
    close(fd);
    return result;
}

static int chci_adapter_ioctl(unsigned long request, uint16_t index) {
    int fd = chci_control_socket();
    if (fd < 0) return fd;
    int result = chci_ioctl_retrying(fd, request, (void *)(uintptr_t)index);
    close(fd);
    return result < 0 ? result : 0;
}

int chci_adapter_up(uint16_t index) { return chci_adapter_ioctl(HCIDEVUP, index); }

int chci_adapter_down(uint16_t index) { return chci_adapter_ioctl(HCIDEVDOWN, index); }

int chci_hci_open(uint16_t device, uint16_t channel, int flags) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | chci_socket_flags(flags), BTPROTO_HCI);
    if (fd < 0) return -errno;
    struct sockaddr_hci address;
    memset(&address, 0, sizeof(address));
    address.hci_family = AF_BLUETOOTH;
    address.hci_dev = device;
    address.hci_channel = channel;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0) return chci_fail_closing(fd, errno);
    return fd;
}

void chci_hci_filter_build(chci_hci_filter *out, const uint8_t *packet_types, size_t packet_type_count,
                           const uint8_t *events, size_t event_count, uint16_t opcode) {
    struct hci_filter filter;
    hci_filter_clear(&filter);
    for (size_t i = 0; i < packet_type_count; i++) hci_filter_set_ptype(packet_types[i], &filter);
    for (size_t i = 0; i < event_count; i++) hci_filter_set_event(events[i], &filter);
    if (opcode != 0) hci_filter_set_opcode(opcode, &filter);
    memset(out, 0, sizeof(*out));
    out->type_mask = filter.type_mask;
    out->event_mask[0] = filter.event_mask[0];
    out->event_mask[1] = filter.event_mask[1];
    out->opcode = filter.opcode;
}

int chci_hci_set_filter(int fd, const chci_hci_filter *filter) {
    struct hci_filter native;
    memset(&native, 0, sizeof(native));
    native.type_mask = filter->type_mask;
    native.event_mask[0] = filter->event_mask[0];
    native.event_mask[1] = filter->event_mask[1];
    native.opcode = htobs(filter->opcode);
    if (setsockopt(fd, SOL_HCI, HCI_FILTER, &native, sizeof(native)) < 0) return -errno;
    return 0;
}

int chci_hci_get_filter(int fd, chci_hci_filter *filter) {
    struct hci_filter native;
    socklen_t length = sizeof(native);
    memset(&native, 0, sizeof(native));
    if (getsockopt(fd, SOL_HCI, HCI_FILTER, &native, &length) < 0) return -errno;
    memset(filter, 0, sizeof(*filter));
    filter->type_mask = native.type_mask;
    filter->event_mask[0] = native.event_mask[0];
    filter->event_mask[1] = native.event_mask[1];
    filter->opcode = btohs(native.opcode);
    return 0;
}

static void chci_l2cap_address(struct sockaddr_l2 *out, const uint8_t *address, uint8_t type) {
    memset(out, 0, sizeof(*out));
    out->l2_family = AF_BLUETOOTH;
    if (address != NULL) memcpy(&out->l2_bdaddr, address, 6);
    out->l2_cid = htobs(CHCI_ATT_CID);
    out->l2_bdaddr_type = type;
}

int chci_l2cap_le_socket(const uint8_t *local_address, uint8_t local_type, int flags) {
    if (local_type != CHCI_ADDRESS_LE_PUBLIC && local_type != CHCI_ADDRESS_LE_RANDOM) return -EINVAL;
    int fd = socket(PF_BLUETOOTH, SOCK_SEQPACKET | chci_socket_flags(flags), BTPROTO_L2CAP);
    if (fd < 0) return -errno;
    struct sockaddr_l2 address;
    chci_l2cap_address(&address, local_address, local_type);
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0) return chci_fail_closing(fd, errno);
    return fd;
}

int chci_l2cap_connect(int fd, const uint8_t *address, uint8_t type) {
    if (address == NULL) return -EINVAL;
    if (type != CHCI_ADDRESS_LE_PUBLIC && type != CHCI_ADDRESS_LE_RANDOM) return -EINVAL;
    struct sockaddr_l2 remote;
    chci_l2cap_address(&remote, address, type);
    // Not retried on EINTR: an interrupted connect continues in the background (POSIX), so the
    // caller waits for writability exactly as for EINPROGRESS.
    if (connect(fd, (struct sockaddr *)&remote, sizeof(remote)) < 0) {
        return errno == EINTR ? -EINPROGRESS : -errno;
    }
    return 0;
}

int chci_l2cap_accept(int fd, uint8_t *peer_address, uint8_t *peer_type, int flags) {
    struct sockaddr_l2 peer;
    socklen_t length = sizeof(peer);
    memset(&peer, 0, sizeof(peer));
    int client;
    do {
        client = accept4(fd, (struct sockaddr *)&peer, &length, chci_socket_flags(flags));
    } while (client < 0 && errno == EINTR);
    if (client < 0) return -errno;
    if (peer_address != NULL) memcpy(peer_address, &peer.l2_bdaddr, 6);
    if (peer_type != NULL) *peer_type = peer.l2_bdaddr_type;
    return client;
}

int chci_l2cap_set_security(int fd, uint8_t level) {
    struct bt_security security;
    memset(&security, 0, sizeof(security));
    security.level = level;
    if (setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, sizeof(security)) < 0) return -errno;
    return 0;
}

int chci_l2cap_get_security(int fd) {
    struct bt_security security;
    socklen_t length = sizeof(security);
    memset(&security, 0, sizeof(security));
    if (getsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, &length) < 0) return -errno;
    return security.level;
}

int chci_l2cap_get_mtu(int fd, uint16_t *send_mtu, uint16_t *receive_mtu) {
    uint16_t send = 0, receive = 0;
    socklen_t length = sizeof(send);
    if (getsockopt(fd, SOL_BLUETOOTH, BT_SNDMTU, &send, &length) == 0) {
        length = sizeof(receive);
        if (getsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &receive, &length) == 0) {
            *send_mtu = send;
            *receive_mtu = receive;
            return 0;
        }
    }
    // Kernels before LE credit-based channels (and some for the fixed ATT channel) answer
    // ENOPROTOOPT/EINVAL to BT_SNDMTU; L2CAP_OPTIONS carries both values there.
    struct l2cap_options options;
    memset(&options, 0, sizeof(options));
    length = sizeof(options);
    if (getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &options, &length) < 0) return -errno;
    *send_mtu = options.omtu;
    *receive_mtu = options.imtu;
    return 0;
}

int chci_l2cap_set_receive_mtu(int fd, uint16_t mtu) {
    if (setsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &mtu, sizeof(mtu)) == 0) return 0;
    struct l2cap_options options;
    socklen_t length = sizeof(options);
    memset(&options, 0, sizeof(options));
    if (getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &options, &length) < 0) return -errno;
    options.imtu = mtu;
    if (setsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &options, sizeof(options)) < 0) return -errno;
    return 0;
}

int chci_socket_error(int fd) {
    int error = 0;
    socklen_t length = sizeof(error);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return -errno;
    return -error;
}
