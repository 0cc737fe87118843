#include "chcrypto.h"

#include <dlfcn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/param_build.h>
#include <openssl/bn.h>
#include <string.h>
#include <pthread.h>

/*
 * libcrypto is loaded on first use, not at start-up: only signed writes and the Database Hash
 * need it, and linking it made every gattclient start relocate it (about 0.7 ms of the 2.9 ms
 * start-up; `dump --summary` on a 100k-record capture takes 16 ms in all). The header types
 * are OpenSSL 3's; the functions come from libcrypto.so.3 through dlsym.
 */
static struct {
    __typeof__(&EVP_MAC_fetch) mac_fetch;
    __typeof__(&EVP_MAC_CTX_new) ctx_new;
    __typeof__(&EVP_MAC_CTX_free) ctx_free;
    __typeof__(&EVP_MAC_init) init;
    __typeof__(&EVP_MAC_update) update;
    __typeof__(&EVP_MAC_final) final;
    __typeof__(&OSSL_PARAM_construct_utf8_string) param_utf8;
    __typeof__(&OSSL_PARAM_construct_end) param_end;
} crypto;

/* The CMAC implementation is fetched once (fetching is costly) and kept for the process. */
static EVP_MAC *cmac_algorithm;
static int load_status = CHCRYPTO_ELOAD;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *library = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return;
    crypto.mac_fetch = (__typeof__(crypto.mac_fetch))dlsym(library, "EVP_MAC_fetch");
    crypto.ctx_new = (__typeof__(crypto.ctx_new))dlsym(library, "EVP_MAC_CTX_new");
    crypto.ctx_free = (__typeof__(crypto.ctx_free))dlsym(library, "EVP_MAC_CTX_free");
    crypto.init = (__typeof__(crypto.init))dlsym(library, "EVP_MAC_init");
    crypto.update = (__typeof__(crypto.update))dlsym(library, "EVP_MAC_update");
    crypto.final = (__typeof__(crypto.final))dlsym(library, "EVP_MAC_final");
    crypto.param_utf8 = (__typeof__(crypto.param_utf8))dlsym(library, "OSSL_PARAM_construct_utf8_string");
    crypto.param_end = (__typeof__(crypto.param_end))dlsym(library, "OSSL_PARAM_construct_end");
    if (!crypto.mac_fetch || !crypto.ctx_new || !crypto.ctx_free || !crypto.init || !crypto.update
        || !crypto.final || !crypto.param_utf8 || !crypto.param_end) {
        return; /* not OpenSSL 3: stays CHCRYPTO_ELOAD (the library stays loaded; harmless) */
    }
    cmac_algorithm = crypto.mac_fetch(NULL, "CMAC", NULL);
    load_status = cmac_algorithm == NULL ? CHCRYPTO_EFETCH : CHCRYPTO_OK;
}

int chcrypto_aes_cmac(const uint8_t key[16], const uint8_t *msg, size_t len, uint8_t out[16]) {
    if (key == NULL || out == NULL || (msg == NULL && len != 0)) return CHCRYPTO_EINVAL;
    pthread_once(&load_once, load);
    if (load_status != CHCRYPTO_OK) return load_status;

    EVP_MAC_CTX *ctx = crypto.ctx_new(cmac_algorithm);
    if (ctx == NULL) return CHCRYPTO_ECTX;

    char cipher[] = "AES-128-CBC";
    OSSL_PARAM params[] = {
        crypto.param_utf8(OSSL_MAC_PARAM_CIPHER, cipher, 0),
        crypto.param_end(),
    };
    int result = CHCRYPTO_OK;
    size_t written = 0;
    if (crypto.init(ctx, key, 16, params) != 1) {
        result = CHCRYPTO_EINIT;
    } else if (len > 0 && crypto.update(ctx, msg, len) != 1) {
        result = CHCRYPTO_EUPDATE;
    } else if (crypto.final(ctx, out, &written, 16) != 1 || written != 16) {
        result = CHCRYPTO_EFINAL;
    }
    crypto.ctx_free(ctx);
    return result;
}

/* --- AES-128 and P-256 for the Security Manager (Core 5.4 Vol 3 Part H §2.2) ------------------ */

static struct {
    __typeof__(&EVP_CIPHER_fetch) cipher_fetch;
    __typeof__(&EVP_CIPHER_CTX_new) cipher_ctx_new;
    __typeof__(&EVP_CIPHER_CTX_free) cipher_ctx_free;
    __typeof__(&EVP_EncryptInit_ex2) encrypt_init;
    __typeof__(&EVP_CIPHER_CTX_set_padding) set_padding;
    __typeof__(&EVP_EncryptUpdate) encrypt_update;
    __typeof__(&EVP_PKEY_CTX_new_from_name) pkey_ctx_new_from_name;
    __typeof__(&EVP_PKEY_CTX_new_from_pkey) pkey_ctx_new_from_pkey;
    __typeof__(&EVP_PKEY_CTX_free) pkey_ctx_free;
    __typeof__(&EVP_PKEY_keygen_init) keygen_init;
    __typeof__(&EVP_PKEY_CTX_set_params) pkey_ctx_set_params;
    __typeof__(&EVP_PKEY_generate) generate;
    __typeof__(&EVP_PKEY_get_octet_string_param) get_octet_string_param;
    __typeof__(&EVP_PKEY_get_bn_param) get_bn_param;
    __typeof__(&EVP_PKEY_free) pkey_free;
    __typeof__(&EVP_PKEY_fromdata_init) fromdata_init;
    __typeof__(&EVP_PKEY_fromdata) fromdata;
    __typeof__(&EVP_PKEY_public_check) public_check;
    __typeof__(&EVP_PKEY_derive_init) derive_init;
    __typeof__(&EVP_PKEY_derive_set_peer) derive_set_peer;
    __typeof__(&EVP_PKEY_derive) derive;
    __typeof__(&BN_bin2bn) bn_bin2bn;
    __typeof__(&BN_bn2binpad) bn_bn2binpad;
    __typeof__(&BN_free) bn_free;
    __typeof__(&OSSL_PARAM_BLD_new) bld_new;
    __typeof__(&OSSL_PARAM_BLD_push_utf8_string) bld_push_utf8;
    __typeof__(&OSSL_PARAM_BLD_push_BN) bld_push_bn;
    __typeof__(&OSSL_PARAM_BLD_push_octet_string) bld_push_octets;
    __typeof__(&OSSL_PARAM_BLD_to_param) bld_to_param;
    __typeof__(&OSSL_PARAM_BLD_free) bld_free;
    __typeof__(&OSSL_PARAM_free) param_free;
} sm;

static EVP_CIPHER *aes_ecb;
static int sm_status = CHCRYPTO_ELOAD;
static pthread_once_t sm_once = PTHREAD_ONCE_INIT;

static void load_sm(void) {
    void *library = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return;
#define SYM(field, name) sm.field = (__typeof__(sm.field))dlsym(library, name); if (!sm.field) return;
    SYM(cipher_fetch, "EVP_CIPHER_fetch")
    SYM(cipher_ctx_new, "EVP_CIPHER_CTX_new")
    SYM(cipher_ctx_free, "EVP_CIPHER_CTX_free")
    SYM(encrypt_init, "EVP_EncryptInit_ex2")
    SYM(set_padding, "EVP_CIPHER_CTX_set_padding")
    SYM(encrypt_update, "EVP_EncryptUpdate")
    SYM(pkey_ctx_new_from_name, "EVP_PKEY_CTX_new_from_name")
    SYM(pkey_ctx_new_from_pkey, "EVP_PKEY_CTX_new_from_pkey")
    SYM(pkey_ctx_free, "EVP_PKEY_CTX_free")
    SYM(keygen_init, "EVP_PKEY_keygen_init")
    SYM(pkey_ctx_set_params, "EVP_PKEY_CTX_set_params")
    SYM(generate, "EVP_PKEY_generate")
    SYM(get_octet_string_param, "EVP_PKEY_get_octet_string_param")
    SYM(get_bn_param, "EVP_PKEY_get_bn_param")
    SYM(pkey_free, "EVP_PKEY_free")
    SYM(fromdata_init, "EVP_PKEY_fromdata_init")
    SYM(fromdata, "EVP_PKEY_fromdata")
    SYM(public_check, "EVP_PKEY_public_check")
    SYM(derive_init, "EVP_PKEY_derive_init")
    SYM(derive_set_peer, "EVP_PKEY_derive_set_peer")
    SYM(derive, "EVP_PKEY_derive")
    SYM(bn_bin2bn, "BN_bin2bn")
    SYM(bn_bn2binpad, "BN_bn2binpad")
    SYM(bn_free, "BN_free")
    SYM(bld_new, "OSSL_PARAM_BLD_new")
    SYM(bld_push_utf8, "OSSL_PARAM_BLD_push_utf8_string")
    SYM(bld_push_bn, "OSSL_PARAM_BLD_push_BN")
    SYM(bld_push_octets, "OSSL_PARAM_BLD_push_octet_string")
    SYM(bld_to_param, "OSSL_PARAM_BLD_to_param")
    SYM(bld_free, "OSSL_PARAM_BLD_free")
    SYM(param_free, "OSSL_PARAM_free")
#undef SYM
    /* The two functions the CMAC loader also needs. */
    pthread_once(&load_once, load);
    if (!crypto.param_utf8 || !crypto.param_end) return;
    aes_ecb = sm.cipher_fetch(NULL, "AES-128-ECB", NULL);
    sm_status = aes_ecb == NULL ? CHCRYPTO_EFETCH : CHCRYPTO_OK;
}

int chcrypto_aes128_encrypt(const uint8_t key[16], const uint8_t plaintext[16], uint8_t out[16]) {
    if (key == NULL || plaintext == NULL || out == NULL) return CHCRYPTO_EINVAL;
    pthread_once(&sm_once, load_sm);
    if (sm_status != CHCRYPTO_OK) return sm_status;
    EVP_CIPHER_CTX *ctx = sm.cipher_ctx_new();
    if (ctx == NULL) return CHCRYPTO_ECTX;
    int result = CHCRYPTO_OK;
    int written = 0;
    if (sm.encrypt_init(ctx, aes_ecb, key, NULL, NULL) != 1 || sm.set_padding(ctx, 0) != 1) {
        result = CHCRYPTO_EINIT;
    } else if (sm.encrypt_update(ctx, out, &written, plaintext, 16) != 1 || written != 16) {
        result = CHCRYPTO_EUPDATE;
    }
    sm.cipher_ctx_free(ctx);
    return result;
}

/* "P-256" as a group-name parameter. */
static OSSL_PARAM group_param(void) {
    static char group[] = "P-256";
    return crypto.param_utf8(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
}

int chcrypto_p256_generate(uint8_t private_key[32], uint8_t public_x[32], uint8_t public_y[32]) {
    if (private_key == NULL || public_x == NULL || public_y == NULL) return CHCRYPTO_EINVAL;
    pthread_once(&sm_once, load_sm);
    if (sm_status != CHCRYPTO_OK) return sm_status;
    EVP_PKEY_CTX *ctx = sm.pkey_ctx_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL) return CHCRYPTO_ECTX;
    OSSL_PARAM params[] = {group_param(), crypto.param_end()};
    EVP_PKEY *key = NULL;
    int result = CHCRYPTO_OK;
    if (sm.keygen_init(ctx) != 1 || sm.pkey_ctx_set_params(ctx, params) != 1 || sm.generate(ctx, &key) != 1) {
        result = CHCRYPTO_EKEY;
    } else {
        uint8_t point[65];
        size_t length = 0;
        BIGNUM *scalar = NULL;
        if (sm.get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &length) != 1
            || length != 65 || point[0] != 0x04
            || sm.get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &scalar) != 1
            || sm.bn_bn2binpad(scalar, private_key, 32) != 32) {
            result = CHCRYPTO_EKEY;
        } else {
            memcpy(public_x, point + 1, 32);
            memcpy(public_y, point + 33, 32);
        }
        if (scalar) sm.bn_free(scalar);
    }
    if (key) sm.pkey_free(key);
    sm.pkey_ctx_free(ctx);
    return result;
}

/*
 * A P-256 key from its private scalar (big-endian, 32 octets) or from its public point X, Y
 * (big-endian, 32 octets each). A public point is checked to lie on the curve and not be the
 * point at infinity (EVP_PKEY_public_check) before it is returned: CHCRYPTO_EPOINT otherwise.
 */
static EVP_PKEY *make_key(const uint8_t *private_key, const uint8_t *x, const uint8_t *y, int *result) {
    *result = CHCRYPTO_ECTX;
    OSSL_PARAM_BLD *builder = sm.bld_new();
    if (builder == NULL) return NULL;
    BIGNUM *scalar = NULL;
    uint8_t point[65];
    int pushed = sm.bld_push_utf8(builder, OSSL_PKEY_PARAM_GROUP_NAME, "P-256", 0);
    if (pushed && private_key != NULL) {
        scalar = sm.bn_bin2bn(private_key, 32, NULL);
        pushed = scalar != NULL && sm.bld_push_bn(builder, OSSL_PKEY_PARAM_PRIV_KEY, scalar);
    }
    if (pushed && x != NULL) {
        point[0] = 0x04;
        memcpy(point + 1, x, 32);
        memcpy(point + 33, y, 32);
        pushed = sm.bld_push_octets(builder, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point);
    }
    OSSL_PARAM *params = pushed ? sm.bld_to_param(builder) : NULL;
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = params ? sm.pkey_ctx_new_from_name(NULL, "EC", NULL) : NULL;
    if (ctx != NULL) {
        int selection = private_key != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY;
        if (sm.fromdata_init(ctx) != 1 || sm.fromdata(ctx, &key, selection, params) != 1) {
            *result = x != NULL ? CHCRYPTO_EPOINT : CHCRYPTO_EKEY;
            key = NULL;
        } else {
            *result = CHCRYPTO_OK;
        }
        sm.pkey_ctx_free(ctx);
    }
    if (key != NULL && x != NULL) {
        EVP_PKEY_CTX *check = sm.pkey_ctx_new_from_pkey(NULL, key, NULL);
        if (check == NULL || sm.public_check(check) != 1) {
            *result = CHCRYPTO_EPOINT;
            sm.pkey_free(key);
            key = NULL;
        }
        if (check) sm.pkey_ctx_free(check);
    }
    if (params) sm.param_free(params);
    if (scalar) sm.bn_free(scalar);
    sm.bld_free(builder);
    return key;
}

int chcrypto_p256_check_public(const uint8_t x[32], const uint8_t y[32]) {
    if (x == NULL || y == NULL) return CHCRYPTO_EINVAL;
    pthread_once(&sm_once, load_sm);
    if (sm_status != CHCRYPTO_OK) return sm_status;
    int result;
    EVP_PKEY *key = make_key(NULL, x, y, &result);
    if (key) sm.pkey_free(key);
    return result;
}

int chcrypto_p256_dhkey(const uint8_t private_key[32], const uint8_t peer_x[32], const uint8_t peer_y[32],
                        uint8_t dhkey[32]) {
    if (private_key == NULL || peer_x == NULL || peer_y == NULL || dhkey == NULL) return CHCRYPTO_EINVAL;
    pthread_once(&sm_once, load_sm);
    if (sm_status != CHCRYPTO_OK) return sm_status;
    int result;
    EVP_PKEY *peer = make_key(NULL, peer_x, peer_y, &result);
    if (peer == NULL) return result;
    EVP_PKEY *ours = make_key(private_key, NULL, NULL, &result);
    if (ours == NULL) {
        sm.pkey_free(peer);
        return result;
    }
    EVP_PKEY_CTX *ctx = sm.pkey_ctx_new_from_pkey(NULL, ours, NULL);
    size_t length = 32;
    if (ctx == NULL) {
        result = CHCRYPTO_ECTX;
    } else if (sm.derive_init(ctx) != 1 || sm.derive_set_peer(ctx, peer) != 1
               || sm.derive(ctx, dhkey, &length) != 1 || length != 32) {
        result = CHCRYPTO_EKEY;
    } else {
        result = CHCRYPTO_OK;
    }
    if (ctx) sm.pkey_ctx_free(ctx);
    sm.pkey_free(ours);
    sm.pkey_free(peer);
    return result;
}
