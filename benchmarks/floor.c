/*
 * The floor: the least work a btsnoop (H4) decoder can do. Reads the whole file, walks every
 * record's btsnoop header, H4 indicator, HCI header; for ACL start fragments the L2CAP basic
 * header; on the ATT channel (CID 0x0004) the ATT opcode and, where the PDU has one, the
 * attribute handle; for LE Meta events the subevent and Num_Reports. Counts records, packet
 * types and ATT opcodes and prints a checksum so the compiler cannot drop the work.
 *
 * Built by gattbench with `cc -O2`. Usage: floor FILE.btsnoop
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: floor FILE.btsnoop\n"); return 64; }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    struct stat st;
    if (fstat(fd, &st) != 0) { perror("fstat"); return 1; }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) { perror("malloc"); return 1; }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n <= 0) { perror("read"); return 1; }
        got += (size_t)n;
    }
    close(fd);
    if (size < 16 || be32(buf + 8) != 1 || be32(buf + 12) != 1002) {
        fprintf(stderr, "%s: not an H4 btsnoop file\n", argv[1]);
        return 1;
    }
    uint64_t records = 0, types[6] = {0}, opcodes[256] = {0}, reports = 0, fragments = 0, malformed = 0;
    uint64_t checksum = 0;
    size_t off = 16;
    while (off + 24 <= size) {
        uint32_t incl = be32(buf + off + 4);
        off += 24;
        if (incl > size - off) { malformed++; break; }
        const uint8_t *p = buf + off;
        off += incl;
        records++;
        if (incl < 1) { malformed++; continue; }
        uint8_t type = p[0];
        types[type < 6 ? type : 0]++;
        const uint8_t *h = p + 1;
        uint32_t len = incl - 1;
        if (type == 0x02) {
            if (len < 4) { malformed++; continue; }
            uint16_t hf = le16(h);
            uint16_t dlen = le16(h + 2);
            if (dlen != len - 4) { malformed++; continue; }
            if (((hf >> 12) & 3) == 1) { fragments++; continue; }
            if (dlen < 4) { malformed++; continue; }
            uint16_t cid = le16(h + 6);
            checksum += (hf & 0x0FFF) + cid;
            if (cid != 0x0004 || dlen < 5) continue;
            uint8_t op = h[8];
            opcodes[op]++;
            uint16_t handle = 0;
            switch (op) {
            case 0x01: if (dlen >= 7) handle = le16(h + 10); break; /* Error Response: handle after request opcode */
            case 0x0A: case 0x0C: case 0x12: case 0x16: case 0x17: case 0x1B: case 0x1D: case 0x52: case 0xD2:
            case 0x04: case 0x06: case 0x08: case 0x10:
                if (dlen >= 7) handle = le16(h + 9);
                break;
            default: break;
            }
            checksum = checksum * 31 + op * 65537u + handle;
        } else if (type == 0x04) {
            if (len < 2 || h[1] != len - 2) { malformed++; continue; }
            uint8_t code = h[0];
            checksum = checksum * 7 + code;
            if (code == 0x3E && len >= 4) {
                uint8_t sub = h[2];
                if (sub == 0x02 || sub == 0x0D || sub == 0x0B) reports += h[3];
                checksum += sub;
            }
        } else if (type == 0x01) {
            if (len < 3 || h[2] != len - 3) { malformed++; continue; }
            checksum = checksum * 5 + le16(h);
        }
    }
    printf("records %llu command %llu acl %llu event %llu continuing-fragments %llu advertising-reports %llu malformed %llu\n",
           (unsigned long long)records, (unsigned long long)types[1], (unsigned long long)types[2],
           (unsigned long long)types[4], (unsigned long long)fragments, (unsigned long long)reports,
           (unsigned long long)malformed);
    printf("att");
    for (int i = 0; i < 256; i++)
        if (opcodes[i]) printf(" 0x%02x:%llu", i, (unsigned long long)opcodes[i]);
    printf("\nchecksum %016llx\n", (unsigned long long)checksum);
    free(buf);
    return 0;
}
