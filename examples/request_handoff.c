/* request_handoff.c -- requests parsed on one thread, served on others.
 *
 * An I/O thread reads requests off the wire and parses each into a region
 * of its own: the header list, a map of the fields by name, the body. It
 * then detaches the region and queues it; one of three workers takes it,
 * attaches it, serves the request, allocates its response in the same
 * region and leaves it, which gives the request's memory back to the OS
 * from the worker's thread. Nothing is copied between the threads and
 * nothing is freed piece by piece: a request is one region from its first
 * byte to its response.
 *
 * Some inputs are malformed on purpose (a header line without a colon, a
 * body shorter than its Content-Length says, a body larger than the
 * request's memory limit). Each fails its own request, whose region the
 * I/O thread leaves at once, and is counted; the process goes on. The
 * program checks that exactly those requests failed, that the workers
 * found every byte they were handed, and that once all is served the
 * runtime holds no region, in flight or not, and no block.
 */
#include <giveback.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUESTS 2000
#define WORKERS 3
/* The queue's bound is also the bound on the memory in flight: the I/O
 * thread waits rather than parse ahead of the workers without end. */
#define QUEUE_CAP 8
/* What one request may hold. The limit travels with the region, so a
 * worker's response is held to it too. */
#define REQUEST_LIMIT ((size_t)1 << 20)
/* Far past the limit, so that only the one malformed kind runs into it. */
#define OVERSIZED_BODY ((size_t)2 << 20)

static const double MiB = 1024.0 * 1024.0;

/* ---- the parsed request: everything below lives in its region. */

typedef struct header {
    struct header *next;
    char *name, *value; /* copies, NUL-terminated */
    size_t name_len, value_len;
} header;

typedef struct request {
    uint64_t id;
    char *path;
    header *headers; /* in the order they arrived */
    size_t header_count;
    gb_map *fields; /* hash of the lower-cased name -> header * */
    char *body;
    size_t body_len;
} request;

/* The name's hash, case folded, as HTTP field names compare. */
static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        h = (h ^ (c >= 'A' && c <= 'Z' ? c + 32u : c)) * 1099511628211u;
    }
    return h;
}

/* A copy of n bytes in the innermost region, NUL-terminated, or NULL when
 * the request's limit refuses it. */
static char *copy_text(const char *s, size_t n)
{
    char *c = gb_try_alloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

/* ---- the queue between the I/O thread and the workers. */

typedef struct job {
    gb_region *r;
    request *req; /* in r: not to be read until r is attached */
} job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t not_full, not_empty;
    job ring[QUEUE_CAP];
    size_t head, len;
    bool closed;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
           {{0}}, 0, 0, false};

static void queue_push(job j)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.len == QUEUE_CAP)
        pthread_cond_wait(&queue.not_full, &queue.lock);
    queue.ring[(queue.head + queue.len++) % QUEUE_CAP] = j;
    pthread_cond_signal(&queue.not_empty);
    pthread_mutex_unlock(&queue.lock);
}

/* The next job, or false once the queue is closed and empty. */
static bool queue_pop(job *out)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.len == 0 && !queue.closed)
        pthread_cond_wait(&queue.not_empty, &queue.lock);
    bool got = queue.len > 0;
    if (got) {
        *out = queue.ring[queue.head];
        queue.head = (queue.head + 1) % QUEUE_CAP;
        queue.len--;
        pthread_cond_signal(&queue.not_full);
    }
    pthread_mutex_unlock(&queue.lock);
    return got;
}

static void queue_close(void)
{
    pthread_mutex_lock(&queue.lock);
    queue.closed = true;
    pthread_cond_broadcast(&queue.not_empty);
    pthread_mutex_unlock(&queue.lock);
}

/* ---- the I/O thread: the wire, the parser, the handoff. */

/* What makes a request malformed. The I/O thread writes the last three on
 * purpose; a request line the parser cannot read is never written, so the
 * parser must never find one. */
enum fault { FAULT_NONE, FAULT_REQUEST_LINE, FAULT_NO_COLON, FAULT_LENGTH, FAULT_OVERSIZED, FAULTS };
static const char *const fault_name[FAULTS] = {
    "none", "request line unreadable", "header line without a colon",
    "body not of its Content-Length", "body over the request's limit"};

typedef struct io_tally {
    size_t made[FAULTS];    /* requests written with each fault */
    size_t refused[FAULTS]; /* requests the parser failed, by what it found */
    size_t accepted;        /* parsed, detached and queued */
    uint64_t words, bytes;  /* in the accepted requests' bodies, as written */
    size_t most_in_flight;  /* regions in flight, read after each detach */
    size_t held_at_exit;    /* regions still entered when it was done */
} io_tally;

/* A fixed seed, so that every run reads the same requests. */
static uint64_t seed = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

/* The I/O thread's read buffer, malloc'd and reused: the bytes as they
 * came off the wire are the I/O thread's, the parsed request the region's. */
typedef struct wire {
    char *buf;
    size_t len, cap;
} wire;

static void wire_put(wire *w, const char *s, size_t n)
{
    if (w->len + n > w->cap) {
        while (w->len + n > w->cap)
            w->cap = w->cap ? 2 * w->cap : 4096;
        w->buf = realloc(w->buf, w->cap);
        if (!w->buf) {
            perror("request_handoff: realloc");
            exit(2);
        }
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void wire_printf(wire *w, const char *fmt, unsigned long long a, unsigned long long b)
{
    char line[128];
    int n = snprintf(line, sizeof line, fmt, a, b);
    wire_put(w, line, (size_t)n);
}

/* Writes request `id` onto the wire with the given fault and returns the
 * words of its body (what a worker must count if it is served). */
static uint64_t write_request(wire *w, uint64_t id, enum fault f, size_t *body_len)
{
    size_t len = f == FAULT_OVERSIZED ? OVERSIZED_BODY : 1 + next_random() % 65536;
    w->len = 0;
    wire_printf(w, "POST /items/%llu HTTP/1.1\r\nX-Request-Id: %llu\r\n",
                (unsigned long long)(id % 97), (unsigned long long)id);
    /* The Content-Length of a short body promises more than arrives. */
    wire_printf(w, "Content-Length: %llu\r\nHost: example%llu\r\n",
                (unsigned long long)(f == FAULT_LENGTH ? len + 10 : len),
                (unsigned long long)(id % 7));
    int tags = 2 + (int)(next_random() % 20);
    for (int t = 0; t < tags; t++) {
        if (f == FAULT_NO_COLON && t == tags / 2)
            wire_printf(w, "X-Tag-%llu broken %llu\r\n", (unsigned long long)t,
                        (unsigned long long)id);
        else
            wire_printf(w, "X-Tag-%llu: value-%llu\r\n", (unsigned long long)t,
                        (unsigned long long)(next_random() % 100000));
    }
    wire_put(w, "\r\n", 2);
    uint64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < len; i++) {
        uint64_t x = next_random();
        char c = x % 6 == 0 ? ' ' : (char)('a' + (x >> 8) % 26);
        words += c != ' ' && !in_word;
        in_word = c != ' ';
        wire_put(w, &c, 1);
    }
    *body_len = len;
    return words;
}

/* Parses the wire into the innermost region, whose limit bounds it.
 * Returns the request, or NULL and the fault found; a failed parse leaves
 * its garbage in the region, which the caller leaves. */
static request *parse(const wire *w, enum fault *found)
{
    const char *p = w->buf, *end = w->buf + w->len;
    request *req = gb_try_calloc(1, sizeof *req);
    if (!req)
        return *found = FAULT_OVERSIZED, NULL;
    /* A map grows through the stopping allocator (there is no try form of
     * gb_map_put), so it holds only the few dozen header names: nothing
     * of a size the sender decides. */
    gb_map *fields = req->fields = gb_map_new();
    header **tail = &req->headers;
    /* The request line, "METHOD PATH VERSION\r\n". */
    const char *eol = memchr(p, '\r', (size_t)(end - p));
    const char *sp = eol ? memchr(p, ' ', (size_t)(eol - p)) : NULL;
    const char *sp2 = sp ? memchr(sp + 1, ' ', (size_t)(eol - sp - 1)) : NULL;
    if (!sp2 || end - eol < 2)
        return *found = FAULT_REQUEST_LINE, NULL;
    if (!(req->path = copy_text(sp + 1, (size_t)(sp2 - sp - 1))))
        return *found = FAULT_OVERSIZED, NULL;
    /* One header a line, up to the empty line; a line that never ends is
     * as malformed as one without a colon. */
    for (p = eol + 2;; p = eol + 2) {
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
            break;
        eol = memchr(p, '\r', (size_t)(end - p));
        const char *colon = eol && end - eol >= 2 ? memchr(p, ':', (size_t)(eol - p)) : NULL;
        if (!colon)
            return *found = FAULT_NO_COLON, NULL;
        const char *v = colon + 1;
        while (v < eol && *v == ' ')
            v++;
        header *h = gb_try_alloc(sizeof *h);
        if (!h || !(h->name = copy_text(p, (size_t)(colon - p))) ||
            !(h->value = copy_text(v, (size_t)(eol - v))))
            return *found = FAULT_OVERSIZED, NULL;
        h->name_len = (size_t)(colon - p);
        h->value_len = (size_t)(eol - v);
        h->next = NULL;
        *tail = h;
        tail = &h->next;
        req->header_count++;
        gb_map_put(fields, name_hash(h->name, h->name_len), (uintptr_t)h);
    }
    p += 2; /* the empty line */
    uint64_t at;
    if (!gb_map_get(fields, name_hash("content-length", 14), &at))
        return *found = FAULT_LENGTH, NULL;
    char *stop;
    const char *length = ((header *)(uintptr_t)at)->value;
    unsigned long long declared = strtoull(length, &stop, 10);
    if (stop == length || *stop != '\0' || declared != (unsigned long long)(end - p))
        return *found = FAULT_LENGTH, NULL;
    if (gb_map_get(fields, name_hash("x-request-id", 12), &at))
        req->id = strtoull(((header *)(uintptr_t)at)->value, NULL, 10);
    /* The body is copied out of the read buffer, which the next request
     * overwrites; this is where a body too large for the limit is refused. */
    if (!(req->body = gb_try_alloc(declared)))
        return *found = FAULT_OVERSIZED, NULL;
    memcpy(req->body, p, declared);
    req->body_len = declared;
    return req;
}

static void *io_thread(void *arg)
{
    io_tally *t = arg;
    wire w = {NULL, 0, 0};
    for (uint64_t id = 1; id <= REQUESTS; id++) {
        enum fault f = id % 200 == 99 ? FAULT_OVERSIZED
                       : id % 50 == 7 ? FAULT_NO_COLON
                       : id % 50 == 23 ? FAULT_LENGTH
                                       : FAULT_NONE;
        size_t body_len;
        uint64_t words = write_request(&w, id, f, &body_len);
        t->made[f]++;
        gb_region *r = gb_enter();
        gb_region_limit(r, REQUEST_LIMIT);
        enum fault found = FAULT_NONE;
        request *req = parse(&w, &found);
        if (!req) {
            /* This request fails, and only it: its region, with whatever
             * the parser had built, goes back here and now. */
            gb_leave(r);
            t->refused[found]++;
            continue;
        }
        /* From here on the region is the worker's; nothing of it is read
         * on this thread again. */
        gb_region_detach(r);
        gb_stats st;
        gb_stats_get(&st);
        if (st.regions_in_flight > t->most_in_flight)
            t->most_in_flight = st.regions_in_flight;
        t->accepted++;
        t->words += words;
        t->bytes += body_len;
        queue_push((job){r, req});
    }
    free(w.buf);
    /* A region forgotten here would be left at the thread's exit, with a
     * message on stderr and no counter left to show it: count it now. */
    t->held_at_exit = gb_depth();
    queue_close();
    return NULL;
}

/* ---- the workers. */

typedef struct worker {
    int index;
    size_t served, failed, misplaced; /* misplaced: memory not found in r */
    size_t held_at_exit;              /* regions still entered when it was done */
    size_t headers;
    uint64_t words, bytes;
    char sample[160]; /* the first response it gave, to print */
} worker;

/* Serves req, in the innermost region r: walks it, checks that every
 * piece is found in r from this thread, and builds the response in r.
 * Returns the response, or NULL when r's limit refuses it. */
static char *serve(worker *wk, gb_region *r, const request *req)
{
    size_t n = 0;
    for (const header *h = req->headers; h; h = h->next, n++) {
        uint64_t at;
        bool mapped = gb_map_get(req->fields, name_hash(h->name, h->name_len), &at) &&
                      (const header *)(uintptr_t)at == h;
        if (!mapped || gb_region_of(h) != r || gb_region_of(h->name) != r ||
            gb_region_of(h->value + h->value_len) != r)
            wk->misplaced++;
    }
    if (n != req->header_count || gb_region_of(req) != r || gb_region_of(req->fields) != r ||
        gb_region_of(req->body) != r || gb_region_of(req->body + req->body_len - 1) != r)
        wk->misplaced++;
    uint64_t words = 0, digest = 14695981039346656037u;
    for (size_t i = 0; i < req->body_len; i++) {
        unsigned char c = (unsigned char)req->body[i];
        words += c != ' ' && (i == 0 || req->body[i - 1] == ' ');
        digest = (digest ^ c) * 1099511628211u;
    }
    /* The response lives in the request's region and goes back with it. */
    size_t cap = 160;
    char *resp = gb_try_alloc(cap);
    if (!resp)
        return NULL;
    snprintf(resp, cap, "200 OK %s id=%llu headers=%zu words=%llu digest=%016llx",
             req->path, (unsigned long long)req->id, n, (unsigned long long)words,
             (unsigned long long)digest);
    if (gb_region_of(resp) != r)
        wk->misplaced++;
    wk->headers += n;
    wk->words += words;
    wk->bytes += req->body_len;
    return resp;
}

static void *worker_thread(void *arg)
{
    worker *wk = arg;
    job j;
    while (queue_pop(&j)) {
        /* In flight, the region is no thread's: this one does not find it
         * before it attaches it. */
        if (gb_region_of(j.req) != NULL)
            wk->misplaced++;
        gb_region_attach(j.r);
        char *resp = serve(wk, j.r, j.req);
        if (resp) {
            if (wk->served++ == 0)
                snprintf(wk->sample, sizeof wk->sample, "%s", resp);
        } else {
            wk->failed++;
        }
        gb_leave(j.r);
    }
    wk->held_at_exit = gb_depth();
    return NULL;
}

/* Every counter of kind GB_STAT_NOW or GB_STAT_KEPT must read zero once
 * the threads are gone; the other kinds (settings, totals since init) are
 * not held memory. */
#define ZERO_GB_STAT_NOW(name) ZERO_CHECK(name)
#define ZERO_GB_STAT_KEPT(name) ZERO_CHECK(name)
#define ZERO_GB_STAT_SETTING(name)
#define ZERO_GB_STAT_SINCE(name)
#define ZERO_CHECK(name)                                                      \
    if (st.name != 0) {                                                       \
        fprintf(stderr, "request_handoff: %s is %zu after the threads exited\n", \
                #name, (size_t)st.name);                                      \
        ok = false;                                                           \
    }
#define ZERO_FIELD(kind, type, name) ZERO_##kind(name)

int main(void)
{
    /* A misuse stops the process with abort(), which drops buffered output:
     * line buffering keeps what was printed before it, even into a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool ok = true;
    io_tally io = {0};
    worker wk[WORKERS];
    pthread_t io_th, wk_th[WORKERS];
    if (pthread_create(&io_th, NULL, io_thread, &io) != 0)
        return 2;
    for (int i = 0; i < WORKERS; i++) {
        wk[i] = (worker){.index = i + 1};
        if (pthread_create(&wk_th[i], NULL, worker_thread, &wk[i]) != 0)
            return 2;
    }
    pthread_join(io_th, NULL);
    worker all = {0};
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(wk_th[i], NULL);
        printf("worker %d: served %zu, failed %zu; first response: %s\n", wk[i].index,
               wk[i].served, wk[i].failed, wk[i].sample);
        all.served += wk[i].served;
        all.failed += wk[i].failed;
        all.misplaced += wk[i].misplaced;
        all.held_at_exit += wk[i].held_at_exit;
        all.headers += wk[i].headers;
        all.words += wk[i].words;
        all.bytes += wk[i].bytes;
    }

    printf("requests %d: accepted %zu, served %zu (%zu headers, %.1f MiB of bodies, "
           "%llu words), failed in serving %zu\n", REQUESTS, io.accepted, all.served,
           all.headers, all.bytes / MiB, (unsigned long long)all.words, all.failed);
    for (int f = FAULT_NONE + 1; f < FAULTS; f++) {
        if (io.made[f] || io.refused[f])
            printf("malformed, %s: written %zu, refused %zu\n", fault_name[f], io.made[f],
                   io.refused[f]);
        if (io.refused[f] != io.made[f]) {
            fprintf(stderr, "request_handoff: %zu requests with a %s, %zu refused for it\n",
                    io.made[f], fault_name[f], io.refused[f]);
            ok = false;
        }
    }
    if (io.accepted != io.made[FAULT_NONE] || all.served != io.accepted || all.failed != 0) {
        fprintf(stderr, "request_handoff: %zu well-formed, %zu accepted, %zu served\n",
                io.made[FAULT_NONE], io.accepted, all.served);
        ok = false;
    }
    if (all.misplaced != 0) {
        fprintf(stderr, "request_handoff: %zu pieces not found in their region\n",
                all.misplaced);
        ok = false;
    }
    if (io.held_at_exit != 0 || all.held_at_exit != 0) {
        fprintf(stderr, "request_handoff: regions still entered when the threads were done: "
                "%zu on the I/O thread, %zu on the workers\n", io.held_at_exit,
                all.held_at_exit);
        ok = false;
    }
    if (all.words != io.words || all.bytes != io.bytes) {
        fprintf(stderr, "request_handoff: bodies written %llu words, %llu bytes; served "
                "%llu words, %llu bytes\n", (unsigned long long)io.words,
                (unsigned long long)io.bytes, (unsigned long long)all.words,
                (unsigned long long)all.bytes);
        ok = false;
    }
    /* Detached at once and queued: never more in flight than the queue
     * holds, plus the one being pushed and one popped by each worker. */
    if (io.most_in_flight > QUEUE_CAP + 1 + WORKERS) {
        fprintf(stderr, "request_handoff: %zu regions in flight at once\n",
                io.most_in_flight);
        ok = false;
    }

    gb_stats st;
    gb_stats_get(&st);
    printf("handoffs %llu, most in flight at once %zu (the queue holds %d), limit "
           "refusals %llu\n", (unsigned long long)st.handoffs, io.most_in_flight, QUEUE_CAP,
           (unsigned long long)st.refusals);
    printf("after the last leave: regions_live %zu, regions_in_flight %zu, blocks_live %zu, "
           "arenas_live %zu\n", st.regions_live, st.regions_in_flight, st.blocks_live,
           st.arenas_live);
    if (st.handoffs != io.accepted || st.refusals != io.made[FAULT_OVERSIZED]) {
        fprintf(stderr, "request_handoff: %llu handoffs for %zu accepted, %llu refusals "
                "for %zu oversized\n", (unsigned long long)st.handoffs, io.accepted,
                (unsigned long long)st.refusals, io.made[FAULT_OVERSIZED]);
        ok = false;
    }
    if (st.regions_live || st.regions_in_flight || st.blocks_live || st.arenas_live) {
        fprintf(stderr, "request_handoff: the runtime still holds regions or blocks\n");
        ok = false;
    }
    /* Every thread that held a region has exited, which gave back its
     * block cache and its pages of descriptors: the runtime holds nothing
     * at all now, wherever each region was entered and left. */
    gb_sweep();
    gb_stats_get(&st);
    GB_STATS_FIELDS(ZERO_FIELD)
    gb_resident res;
    gb_resident_get(&res);
    printf("resident after the last leave: %.1f MiB (peak %.1f MiB)\n", res.rss / MiB,
           res.peak / MiB);
    printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
