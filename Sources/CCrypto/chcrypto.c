#include "chcrypto.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>

/* The CMAC implementation is fetched once (fetching is costly) and kept for the process. */
static EVP_MAC *cmac_algorithm;
static pthread_once_t cmac_once = PTHREAD_ONCE_INIT;

static void fetch_cmac(void) { cmac_algorithm = EVP_MAC_fetch(NULL, "CMAC", NULL); }

int chcrypto_aes_cmac(const uint8_t key[16], const uint8_t *msg, size_t len, uint8_t out[16]) {
    if (key == NULL || out == NULL || (msg == NULL && len != 0)) return CHCRYPTO_EINVAL;
    pthread_once(&cmac_once, fetch_cmac);
    if (cmac_algorithm == NULL) return CHCRYPTO_EFETCH;

    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(cmac_algorithm);
    if (ctx == NULL) return CHCRYPTO_ECTX;

    char cipher[] = "AES-128-CBC";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
        OSSL_PARAM_construct_end(),
    };
    int result = CHCRYPTO_OK;
    size_t written = 0;
    if (EVP_MAC_init(ctx, key, 16, params) != 1) {
        result = CHCRYPTO_EINIT;
    } else if (len > 0 && EVP_MAC_update(ctx, msg, len) != 1) {
        result = CHCRYPTO_EUPDATE;
    } else if (EVP_MAC_final(ctx, out, &written, 16) != 1 || written != 16) {
        result = CHCRYPTO_EFINAL;
    }
    EVP_MAC_CTX_free(ctx);
    return result;
}
