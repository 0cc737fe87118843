#ifndef CHCI_H
#define CHCI_H
/* Placeholder until the shim lands: the CHCI target is being written. */
#endif
