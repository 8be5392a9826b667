/* reader.c -- the fuzz target of the gate kit's C reader: what a program
 * prints, parsed (gates/kit/gbgate_reader.c).
 *
 * The input is a program's stdout, any bytes. The reader's own functions
 * split it into lines, find the lines of the protocol (checkpoint and
 * settled, reserved at a line's start) and check each against the
 * grammar (gbgate_line_check). Each verdict is compared with a second
 * reading of the grammar written apart from the first, with POSIX regular
 * expressions over the whole line (the kit's README, "The protocol"): a
 * line one accepts and the other refuses stops the target, naming both.
 * A refusal must say why in a message that ends inside its buffer, and no
 * byte of the input may be read past its end (the sanitizers' part).
 *
 * The reader's source is included whole, so that its static line
 * functions (kind_of, line_after, lines_printed, nth_line) are the ones
 * fuzzed, not copies.
 */
#include "../gates/kit/gbgate_reader.c"

#include <regex.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static regex_t line_re, figure_re;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* The line: the reserved word, a name, then KEY=VALUE fields, one
     * space apart, printable ASCII only. Lengths are checked apart (a
     * bound of 256 in an ERE is slow to compile in some libcs). */
    if (regcomp(&line_re,
                "^(checkpoint|settled) [A-Za-z0-9._-]+( [A-Za-z_][A-Za-z0-9_]*=[!-~]*)*$",
                REG_EXTENDED | REG_NOSUB) != 0 ||
        regcomp(&figure_re, "^[0-9]+([.][0-9]+)?$", REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "reader: the oracle's expressions do not compile\n");
        abort();
    }
    return 0;
}

/* The grammar read the second way: 1 when line (NUL-free, len bytes)
 * keeps it. */
static int oracle(const char *line, size_t len)
{
    if (len > 4096 || regexec(&line_re, line, 0, NULL, 0) != 0)
        return 0;
    const char *name = strchr(line, ' ') + 1;
    const char *field = strchr(name, ' ');
    if ((field ? (size_t)(field - name) : strlen(name)) > 64)
        return 0;
    /* Each field: the key's length, the value's, each key once, and the
     * figures a reader reads as numbers of at most 15 whole digits. */
    const char *keys[2048]; /* a line of 4096 bytes has at most 1,364 fields */
    size_t klens[2048];
    int nkeys = 0;
    while (field) {
        const char *k = field + 1, *eq = strchr(k, '='), *next = strchr(k, ' ');
        size_t klen = (size_t)(eq - k), vlen = next ? (size_t)(next - eq - 1) : strlen(eq + 1);
        if (klen > 64 || vlen > 256)
            return 0;
        for (int i = 0; i < nkeys; i++)
            if (klens[i] == klen && memcmp(keys[i], k, klen) == 0)
                return 0;
        keys[nkeys] = k;
        klens[nkeys++] = klen;
        if ((klen == 8 && memcmp(k, "held_kib", 8) == 0) || (klen == 13 && memcmp(k, "footprint_kib", 13) == 0)) {
            char v[257];
            memcpy(v, eq + 1, vlen);
            v[vlen] = '\0';
            const char *dot = strchr(v, '.');
            if (regexec(&figure_re, v, 0, NULL, 0) != 0 || (dot ? (size_t)(dot - v) : vlen) > 15)
                return 0;
        }
        field = next;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The buffer as the reader's drain leaves it: NUL made \001 (a line
     * with a NUL is then refused for the byte, not cut short), ended by
     * a NUL of its own. */
    buffer b = {0};
    b.p = malloc(size + 1);
    if (!b.p)
        return 0;
    for (size_t i = 0; i < size; i++)
        b.p[i] = data[i] ? (char)data[i] : '\001';
    b.p[size] = '\0';
    b.len = size;
    b.cap = size + 1;
    /* The lines of the protocol counted apart: those that begin with a
     * reserved word followed by a blank, or by nothing. */
    int want_n = 0;
    for (const char *l = b.p; l < b.p + size; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : b.p + size) {
        size_t w = strncmp(l, "checkpoint", 10) == 0 ? 10 : strncmp(l, "settled", 7) == 0 ? 7 : 0;
        want_n += w && (l[w] == ' ' || l[w] == '\t' || l[w] == '\n' || l[w] == '\0');
    }
    int n = lines_printed(&b);
    if (n != want_n) {
        fprintf(stderr, "reader: lines_printed counts %d lines of the protocol, not %d\n", n, want_n);
        abort();
    }
    const char *prev = NULL;
    for (int k = 1; k <= n; k++) {
        const char *l = nth_line(&b, k);
        if (!l || kind_of(l) != (l[0] == 's') || l <= prev || (l != b.p && l[-1] != '\n')) {
            fprintf(stderr, "reader: line %d of %d of the protocol is not one, or not after the one before (%s)\n", k,
                    n, l ? "not reserved, or out of order" : "none");
            abort();
        }
        prev = l;
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        char line[4097 + 1], why[160];
        why[0] = '\0';
        memset(why + 1, 'x', sizeof why - 1);
        int ok = gbgate_line_check(l, len, why, sizeof why) == 0;
        int want = 0;
        if (len <= 4096) {
            memcpy(line, l, len);
            line[len] = '\0';
            want = oracle(line, len);
        }
        if (ok != want) {
            fprintf(stderr, "reader: the line of %zu bytes is %s by gbgate_line_check (%s) and %s by the grammar\n",
                    len, ok ? "accepted" : "refused", ok ? "-" : why, want ? "kept" : "broken");
            abort();
        }
        if (!ok && (why[0] == '\0' || memchr(why, '\0', sizeof why) == NULL)) {
            fprintf(stderr, "reader: a refused line's reason is empty or not ended in its buffer\n");
            abort();
        }
    }
    free(b.p);
    return 0;
}
