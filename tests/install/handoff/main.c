/* main.c -- a region handed from a producer thread to a consumer thread,
 * built against the installed package.
 *
 * For each of 50 rounds, a producer thread fills a region with a 64 MiB
 * linked list and detaches it; a consumer thread attaches it, finds every
 * node in it with gb_region_of, sums the list, allocates more in it and
 * leaves it.
 *
 * Everything it checks is measured in this run: the count of nodes the
 * consumer found in the region, their sum against the one computed apart
 * from the list, and the resident size read with gb_resident_get before
 * the first round, at the end of each round (before its leave) and after
 * each leave. The memory must come back: under the size before the first
 * round plus 16 MiB after every leave, the last one included. And the
 * rounds must really have held it, or that check would prove nothing:
 * above the size before plus 64 MiB at some round's end. Exits 0 when all
 * of it holds, prints "ok" last; 1 otherwise, saying what failed on
 * stderr.
 */
#include <giveback.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
#define ROUNDS 50
#define LIST_BYTES (64 * MIB)
#define MORE_BYTES (8 * MIB)
#define MORE_PIECE MIB
/* What may stay resident after the last leave: the thread's block cache
 * (8 MiB by default) and what the threads and the C library took besides. */
#define SLACK (16 * MIB)

static const double MiB = 1024.0 * 1024.0;

/* 64 bytes: the list is LIST_BYTES / 64 nodes, each written whole, so
 * every page of it is resident when the consumer gets it. */
typedef struct node {
    struct node *next;
    uint64_t value;
    uint64_t index;
    unsigned char pad[40];
} node;

#define NODES (LIST_BYTES / sizeof(node))

/* The value of node i of round k: different in every round, so that a
 * consumer handed a stale list gets the wrong sum. */
static uint64_t value_of(uint64_t round, uint64_t i)
{
    return (i + 1) * 0x9e3779b97f4a7c15u + round * 1000003u;
}

/* The mailbox between the two threads. The consumer asks for each round
 * once it has left the one before, so that what is resident at a round's
 * end is that round's region and what is resident after its leave is what
 * the region left behind: the producer is not filling the next list in
 * the meantime. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int asked;         /* the round the consumer waits for */
    gb_region *region; /* in flight, or NULL */
    node *head;        /* the list in it */
    int round;         /* the round it was filled for */
} box = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL, 0};

static void *producer(void *arg)
{
    (void)arg;
    for (int round = 1; round <= ROUNDS; round++) {
        pthread_mutex_lock(&box.lock);
        while (box.asked < round)
            pthread_cond_wait(&box.cond, &box.lock);
        pthread_mutex_unlock(&box.lock);
        gb_region *r = gb_enter();
        node *head = NULL;
        for (size_t i = 0; i < NODES; i++) {
            node *n = gb_alloc(sizeof *n);
            n->next = head;
            n->value = value_of((uint64_t)round, i);
            n->index = i;
            memset(n->pad, (int)(i & 0xff), sizeof n->pad);
            head = n;
        }
        /* Off this thread's stack before it is posted: the consumer may
         * attach it the moment it sees it. */
        gb_region_detach(r);
        pthread_mutex_lock(&box.lock);
        box.region = r;
        box.head = head;
        box.round = round;
        pthread_cond_broadcast(&box.cond);
        pthread_mutex_unlock(&box.lock);
    }
    return NULL;
}

typedef struct result {
    bool ok;
    size_t rss_before;     /* read before the first round */
    size_t rss_peak;       /* the largest resident size read at a round's end */
    size_t rss_most_after; /* the largest read after a round's leave */
    size_t rss_after;      /* read after the last leave */
} result;

static void fail(result *res, int round, const char *what, unsigned long long got,
                 unsigned long long want)
{
    fprintf(stderr, "handoff_client: round %d: %s: %llu, expected %llu\n", round, what, got,
            want);
    res->ok = false;
}

static void *consumer(void *arg)
{
    result *res = arg;
    for (int round = 1; round <= ROUNDS; round++) {
        pthread_mutex_lock(&box.lock);
        box.asked = round;
        pthread_cond_broadcast(&box.cond);
        while (!box.region)
            pthread_cond_wait(&box.cond, &box.lock);
        gb_region *r = box.region;
        node *head = box.head;
        int got_round = box.round;
        box.region = NULL;
        pthread_cond_broadcast(&box.cond);
        pthread_mutex_unlock(&box.lock);
        if (got_round != round)
            fail(res, round, "the round handed over", (unsigned long long)got_round,
                 (unsigned long long)round);

        /* In flight, the list is in no thread's region; attached, in r. */
        if (gb_region_of(head) != NULL)
            fail(res, round, "nodes found before the attach", 1, 0);
        gb_region_attach(r);
        size_t found = 0, count = 0;
        uint64_t sum = 0, want = 0;
        for (const node *n = head; n; n = n->next, count++) {
            found += gb_region_of(n) == r;
            sum += n->value;
        }
        for (size_t i = 0; i < NODES; i++)
            want += value_of((uint64_t)round, i);
        if (count != NODES)
            fail(res, round, "nodes in the list", count, NODES);
        if (found != NODES)
            fail(res, round, "nodes gb_region_of found in the region", found, NODES);
        if (sum != want)
            fail(res, round, "the sum of the list", sum, want);

        /* The region is this thread's now: it allocates in it too. */
        size_t more_found = 0;
        for (size_t k = 0; k < MORE_BYTES / MORE_PIECE; k++) {
            unsigned char *p = gb_alloc(MORE_PIECE);
            memset(p, 0x5a, MORE_PIECE);
            more_found += gb_region_of(p) == r && gb_region_of(p + MORE_PIECE - 1) == r;
        }
        if (more_found != MORE_BYTES / MORE_PIECE)
            fail(res, round, "pieces allocated after the attach found in the region",
                 more_found, MORE_BYTES / MORE_PIECE);

        gb_resident rs;
        if (gb_resident_get(&rs) != 0)
            fail(res, round, "gb_resident_get", 1, 0);
        if (rs.rss > res->rss_peak)
            res->rss_peak = rs.rss;
        gb_leave(r);
        gb_resident left;
        if (gb_resident_get(&left) != 0)
            fail(res, round, "gb_resident_get", 1, 0);
        if (left.rss > res->rss_most_after)
            res->rss_most_after = left.rss;
        if (left.rss >= res->rss_before + SLACK) {
            fprintf(stderr, "handoff_client: round %d: %zu bytes resident after the leave, "
                    "not under %zu before the first round plus 16 MiB\n", round, left.rss,
                    res->rss_before);
            res->ok = false;
        }
        res->rss_after = left.rss;
        if (round == 1 || round % 10 == 0)
            printf("round %d: %zu nodes found in the region from the consumer, sum %s, "
                   "resident %.1f MiB before the leave, %.1f MiB after it\n", round, found,
                   sum == want ? "right" : "WRONG", rs.rss / MiB, left.rss / MiB);
    }
    return NULL;
}

int main(void)
{
    /* A misuse stops the process with abort(), which drops buffered output:
     * line buffering keeps what was printed before it, even into a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    gb_resident before;
    if (gb_resident_get(&before) != 0 || before.rss == 0) {
        fprintf(stderr, "handoff_client: gb_resident_get cannot read the resident size\n");
        return 1;
    }
    result res = {true, before.rss, 0, 0, 0};
    pthread_t p, c;
    if (pthread_create(&p, NULL, producer, NULL) != 0 ||
        pthread_create(&c, NULL, consumer, &res) != 0) {
        fprintf(stderr, "handoff_client: pthread_create failed\n");
        return 1;
    }
    pthread_join(p, NULL);
    pthread_join(c, NULL);

    gb_stats st;
    gb_stats_get(&st);
    printf("resident: before the first round %.1f MiB, the most at a round's end %.1f MiB, "
           "the most after a round's leave %.1f MiB, after the last leave %.1f MiB; "
           "handoffs %llu\n", before.rss / MiB, res.rss_peak / MiB,
           res.rss_most_after / MiB, res.rss_after / MiB, (unsigned long long)st.handoffs);
    /* The check below could not fail if the rounds had never held their
     * lists: the peak must show them. */
    if (res.rss_peak <= before.rss + LIST_BYTES) {
        fprintf(stderr, "handoff_client: the most resident at a round's end, %zu bytes, is "
                "not above %zu before the first round plus the list's 64 MiB\n",
                res.rss_peak, before.rss);
        res.ok = false;
    }
    if (res.rss_after >= before.rss + SLACK) {
        fprintf(stderr, "handoff_client: %zu bytes resident after the last leave, not under "
                "%zu before the first round plus 16 MiB\n", res.rss_after, before.rss);
        res.ok = false;
    }
    if (st.handoffs != ROUNDS || st.regions_live != 0 || st.regions_in_flight != 0 ||
        st.blocks_live != 0) {
        fprintf(stderr, "handoff_client: handoffs %llu (expected %d), regions_live %zu, "
                "regions_in_flight %zu, blocks_live %zu (expected 0)\n",
                (unsigned long long)st.handoffs, ROUNDS, st.regions_live,
                st.regions_in_flight, st.blocks_live);
        res.ok = false;
    }
    printf("%s\n", res.ok ? "ok" : "FAILED");
    return res.ok ? 0 : 1;
}
