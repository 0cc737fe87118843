/*
 * CCrypto: a thin shim over OpenSSL 3's libcrypto for the one primitive GATT needs, AES-CMAC
 * (RFC 4493). libcrypto.so.3 is loaded (dlopen) on the first call, so that programs that never
 * sign or hash do not pay for loading it at start-up. It exists because the EVP_MAC API takes an OSSL_PARAM array built with macros
 * (OSSL_PARAM_construct_utf8_string, OSSL_PARAM_END) and opaque handles that Swift cannot
 * import cleanly; the shim hides them behind one call with plain buffers.
 *
 * Every symbol is prefixed chcrypto_. Errors are negative return values (below), never errno.
 */
#ifndef CHCRYPTO_H
#define CHCRYPTO_H

#include <stddef.h>
#include <stdint.h>

/* Error codes returned (negated) by chcrypto_aes_cmac. */
enum {
    CHCRYPTO_OK = 0,
    CHCRYPTO_EINVAL = -1,   /* a NULL buffer (msg may be NULL only when len is 0) */
    CHCRYPTO_EFETCH = -2,   /* libcrypto has no "CMAC" MAC (provider not loaded) */
    CHCRYPTO_ECTX = -3,     /* EVP_MAC_CTX_new failed (out of memory) */
    CHCRYPTO_EINIT = -4,    /* EVP_MAC_init refused the key or the AES-128-CBC cipher */
    CHCRYPTO_EUPDATE = -5,  /* EVP_MAC_update failed */
    CHCRYPTO_EFINAL = -6,   /* EVP_MAC_final failed or gave other than 16 octets */
    CHCRYPTO_ELOAD = -7,    /* libcrypto.so.3 (OpenSSL 3) could not be loaded */
};

/*
 * AES-128-CMAC of the len octets at msg under the 16-octet key, written to out (16 octets).
 * Octet order is RFC 4493's: key[0] and out[0] are the most significant octets.
 * Returns 0 or one of the negative CHCRYPTO_E* codes. Thread-safe.
 */
int chcrypto_aes_cmac(const uint8_t key[16], const uint8_t *msg, size_t len, uint8_t out[16]);

#endif
