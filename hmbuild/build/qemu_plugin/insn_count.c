/* insn_count: a qemu-user TCG plugin that counts the guest instructions executed and the bytes
 * they load and store, per translated block, so that hmbuild can attribute them to functions.
 *
 *   qemu-aarch64 -plugin insn_count.so,out=FILE[,exact=1] PROGRAM ...
 *
 * Cost: one inline 64-bit add per executed block (the block's execution count); instructions and
 * bytes are known per block at translation time, so a counted run is a few percent slower than
 * a plain one, not a callback per instruction. The bytes an instruction loads and stores are
 * decoded from its AArch64 encoding (decode_mem below); a load/store the decoder does not know
 * (SVE, MTE, ...) gets a memory callback instead, which sees the real access size, so totals stay
 * exact either way. exact=1 counts every access through callbacks (slow), to check the decoder
 * (and DC ZVA, whose zeroing runs in a helper those callbacks miss, by an execution callback).
 *
 * At exit FILE holds one line per translated block,
 *   tb VADDR HADDR INSNS LOAD_BYTES STORE_BYTES EXECS CB_LOAD CB_STORE
 * then "exact LOAD STORE" (with exact=1), then "maps" and the host's /proc/self/maps, from which
 * hmbuild maps each block's host address (guest memory lives at a fixed offset in qemu-user) to a
 * file and offset, and from there to an ELF symbol. With more than one guest thread the inline
 * adds can race; hmbuild counts single-threaded runs.
 *
 * Debian ships qemu-user without qemu-plugin.h, so the few declarations of the plugin API
 * (version 1, qemu 4.2 .. 8.x) used here are written out below; they follow qemu's documented
 * C interface. */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
typedef struct qemu_info_t qemu_info_t; /* read by nothing here */
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                          void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *insn);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

EXPORT int qemu_plugin_version = 1;

struct block {
    uint64_t vaddr, haddr;
    uint32_t insns, load, store;
    uint64_t execs;              /* the inline counter */
    uint64_t cb_load, cb_store;  /* bytes seen by memory callbacks (undecoded instructions) */
};

static struct block **blocks;
static size_t n_blocks, cap_blocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *out_path;
static bool exact;
static uint64_t exact_load, exact_store;

/* Bytes one AArch64 instruction loads (*ld) and stores (*st). Returns false for an instruction of
 * the loads-and-stores group (or SVE's memory group) that it does not decode; true otherwise (most
 * instructions: no memory access). Encodings: Arm ARM, "Loads and Stores". */
static bool decode_mem(uint32_t i, uint32_t *ld, uint32_t *st) {
    *ld = *st = 0;
    if ((i & ~0x1Fu) == 0xD50B7420u) { /* DC ZVA: zeroes a 64-byte block */
        *st = 64;
        return true;
    }
    if ((i & 0x1E000000u) == 0x04000000u && (i >> 31)) return false; /* SVE memory: callbacks */
    if ((i & 0x0A000000u) != 0x08000000u) return true;              /* not a load or store */
    const uint32_t size = i >> 30, v = (i >> 26) & 1, l = (i >> 22) & 1;
    uint32_t n = 0;
    bool load = l;
    if ((i & 0xBFBF0000u) == 0x0C000000u || (i & 0xBFA00000u) == 0x0C800000u) {
        /* SIMD load/store multiple structures: registers x 8 or 16 bytes */
        static const uint8_t regs[16] = {4, 0, 4, 0, 3, 0, 3, 1, 2, 0, 2, 0, 0, 0, 0, 0};
        const uint32_t r = regs[(i >> 12) & 0xF];
        if (r == 0) return false;
        n = r * ((i >> 30) & 1 ? 16 : 8);
    } else if ((i & 0xBF9F0000u) == 0x0D000000u || (i & 0xBF800000u) == 0x0D800000u) {
        /* SIMD load/store single structure (lane or replicate): structures x element bytes */
        const uint32_t selem = ((((i >> 13) & 1) << 1) | ((i >> 21) & 1)) + 1;
        uint32_t esize;
        switch ((i >> 14) & 3) {
            case 0: esize = 1; break;
            case 1: esize = 2; break;
            case 2: esize = (i >> 10) & 1 ? 8 : 4; break;
            default: esize = 1u << ((i >> 10) & 3); break;
        }
        n = selem * esize;
    } else if ((i & 0x3F000000u) == 0x08000000u) {
        /* exclusive / acquire-release, incl. pairs; compare-and-swap loads and stores */
        const uint32_t o2 = (i >> 23) & 1, o1 = (i >> 21) & 1;
        n = 1u << size;
        if (o1 && !o2 && size >= 2) n *= 2;
        if (o1 && o2) { *ld = *st = n; return true; } /* CAS */
    } else if ((i & 0x3B000000u) == 0x18000000u) {
        /* load register (literal) */
        static const uint8_t gp[4] = {4, 8, 4, 0}, simd[4] = {4, 8, 16, 0};
        n = v ? simd[size] : gp[size];
        load = true;
    } else if ((i & 0x3A000000u) == 0x28000000u) {
        /* load/store pair */
        static const uint8_t gp[4] = {4, 4, 8, 0}, simd[4] = {4, 8, 16, 0};
        n = 2 * (v ? simd[size] : gp[size]);
        if (n == 0) return false;
    } else if ((i & 0x3A000000u) == 0x38000000u) {
        /* load/store register: unsigned offset, unscaled, pre/post-index, register offset, atomics */
        const uint32_t opc = (i >> 22) & 3;
        const bool unsigned_offset = (i >> 24) & 1;
        if (!unsigned_offset && ((i >> 21) & 1) && ((i >> 10) & 3) == 0) { /* atomic memory operations */
            *ld = *st = 1u << size;
            return true;
        }
        if (!unsigned_offset && ((i >> 21) & 1) && ((i >> 10) & 1)) return false; /* PAC loads */
        if (v) {
            n = (opc & 2) ? (size == 0 ? 16 : 0) : 1u << size;
            if (n == 0) return false;
            load = opc & 1;
        } else {
            if (size == 3 && opc == 2) return true; /* PRFM: no access */
            n = 1u << size;
            load = opc != 0;
        }
    } else {
        return false;
    }
    if (load) *ld = n;
    else *st = n;
    return true;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)vcpu;
    (void)vaddr;
    const uint64_t bytes = 1ull << qemu_plugin_mem_size_shift(info);
    const bool store = qemu_plugin_mem_is_store(info);
    if (exact) {
        if (store) exact_store += bytes;
        else exact_load += bytes;
    }
    struct block *b = udata;
    if (b) {
        if (store) b->cb_store += bytes;
        else b->cb_load += bytes;
    }
}

/* exact=1: DC ZVA zeroes its block in a qemu helper that memory callbacks do not see. */
static void on_dc_zva(unsigned int vcpu, void *udata) {
    (void)vcpu;
    (void)udata;
    exact_store += 64;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    struct block *b = calloc(1, sizeof *b);
    if (!b) return;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->insns = (uint32_t)n;
    for (size_t k = 0; k < n; ++k) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        if (k == 0) b->haddr = (uint64_t)(uintptr_t)qemu_plugin_insn_haddr(insn);
        uint32_t word = 0, ld = 0, st = 0;
        if (qemu_plugin_insn_size(insn) == 4) memcpy(&word, qemu_plugin_insn_data(insn), 4);
        if (decode_mem(word, &ld, &st)) {
            b->load += ld;
            b->store += st;
            if (exact) qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
            if (exact && (word & ~0x1Fu) == 0xD50B7420u)
                qemu_plugin_register_vcpu_insn_exec_cb(insn, on_dc_zva, QEMU_PLUGIN_CB_NO_REGS, NULL);
        } else {
            qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, b);
        }
    }
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
    pthread_mutex_lock(&lock);
    if (n_blocks == cap_blocks) {
        const size_t cap = cap_blocks ? 2 * cap_blocks : 4096;
        struct block **grown = realloc(blocks, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&lock);
            return; /* the block runs uncounted; the report's totals would be short, never wrong per block */
        }
        blocks = grown;
        cap_blocks = cap;
    }
    blocks[n_blocks++] = b;
    pthread_mutex_unlock(&lock);
}

static void on_exit_(qemu_plugin_id_t id, void *udata) {
    (void)id;
    (void)udata;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        fprintf(stderr, "insn_count: cannot write %s\n", out_path);
        return;
    }
    fprintf(f, "# insn_count 1\n");
    for (size_t k = 0; k < n_blocks; ++k) {
        const struct block *b = blocks[k];
        if (b->execs == 0) continue;
        fprintf(f, "tb %" PRIx64 " %" PRIx64 " %u %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", b->vaddr, b->haddr,
                b->insns, b->load, b->store, b->execs, b->cb_load, b->cb_store);
    }
    if (exact) fprintf(f, "exact %" PRIu64 " %" PRIu64 "\n", exact_load, exact_store);
    fprintf(f, "maps\n");
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps) {
        char line[4096];
        while (fgets(line, sizeof line, maps)) fputs(line, f);
        fclose(maps);
    }
    fprintf(f, "end\n");
    fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    for (int k = 0; k < argc; ++k) {
        if (strncmp(argv[k], "out=", 4) == 0) out_path = strdup(argv[k] + 4);
        else if (strcmp(argv[k], "exact=1") == 0 || strcmp(argv[k], "exact=on") == 0) exact = true;
        else {
            fprintf(stderr, "insn_count: unknown argument '%s' (takes out=FILE and exact=1)\n", argv[k]);
            return -1;
        }
    }
    if (!out_path) {
        fprintf(stderr, "insn_count: give out=FILE\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
    return 0;
}
