/*
 * CCrypto: a thin shim over OpenSSL 3's libcrypto for AES-CMAC (RFC 4493: signed writes, the
 * Database Hash, the Security Manager's f4–h7), AES-128 (its e) and P-256 keys and ECDH. libcrypto.so.3 is loaded (dlopen) on the first call, so that programs that never
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
    CHCRYPTO_EKEY = -8,     /* a P-256 key could not be made, exported or used (derive) */
    CHCRYPTO_EPOINT = -9,   /* a public key is not a point of P-256 (off the curve, or infinity) */
};

/*
 * AES-128-CMAC of the len octets at msg under the 16-octet key, written to out (16 octets).
 * Octet order is RFC 4493's: key[0] and out[0] are the most significant octets.
 * Returns 0 or one of the negative CHCRYPTO_E* codes. Thread-safe.
 */
int chcrypto_aes_cmac(const uint8_t key[16], const uint8_t *msg, size_t len, uint8_t out[16]);

/*
 * AES-128 of one block (the Security Manager's function e, Vol 3 Part H §2.2.1): out = E(key,
 * plaintext), octets most significant first. Returns 0 or a negative CHCRYPTO_E* code.
 */
int chcrypto_aes128_encrypt(const uint8_t key[16], const uint8_t plaintext[16], uint8_t out[16]);

/*
 * A fresh P-256 key pair from OpenSSL's generator (seeded by the OS): the private scalar and the
 * public point's coordinates, each 32 octets, most significant first.
 */
int chcrypto_p256_generate(uint8_t private_key[32], uint8_t public_x[32], uint8_t public_y[32]);

/* 0 when (x, y) is a point of P-256 (not infinity), CHCRYPTO_EPOINT when it is not. */
int chcrypto_p256_check_public(const uint8_t x[32], const uint8_t y[32]);

/*
 * The ECDH shared secret (the x coordinate of private_key × peer point, 32 octets, most
 * significant first). The peer's point is checked first: CHCRYPTO_EPOINT when it is off the
 * curve (CVE-2018-5383), and nothing is derived.
 */
int chcrypto_p256_dhkey(const uint8_t private_key[32], const uint8_t peer_x[32], const uint8_t peer_y[32],
                        uint8_t dhkey[32]);

#endif
