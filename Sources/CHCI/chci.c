// The kernel HCI/L2CAP shim: see include/chci.h.
