/* options.c -- every option, walked from the runtime's one table of them
 * (gb__options, init.c): its variable's words and numbers, a malformed
 * value, and a second gb_init asking for another setting of it. No option
 * is named here: a row added to the table is tested by every case. */
#include "common.h"
#include "internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define ROWS gb__options_count

/* What a child does: the option under test, the variable's value or the
 * member's, set before the runtime's first use. */
static const gb__option *row;
static const char *env_value;
static size_t member_value;

/* Writes the value v into option t's member of o. */
static void set_member(gb_options *o, const gb__option *t, size_t v)
{
    char *p = (char *)o + t->offset;
    if (t->type) {
        int i = (int)v;
        memcpy(p, &i, sizeof i);
    } else if (t->size == sizeof(unsigned)) {
        unsigned u = (unsigned)v;
        memcpy(p, &u, sizeof u);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

/* Prints every option's setting in force, "member=value" a line. */
static void print_in_force(void)
{
    for (int i = 0; i < ROWS; i++) {
        char v[64];
        gb__option_in_force(&gb__options[i], &gb__cfg, v, sizeof v);
        fprintf(stderr, "%s=%s\n", gb__options[i].field, v);
    }
}

static void first_use_under_env(void)
{
    setenv(row->env, env_value, 1);
    gb_leave(gb_enter());
    print_in_force();
}

static void init_with_member(void)
{
    gb_options o;
    gb_options_init(&o);
    set_member(&o, row, member_value);
    gb_init(&o);
    print_in_force();
}

static void init_twice(void)
{
    gb_init(NULL);
    gb_options o;
    gb_options_init(&o);
    set_member(&o, row, member_value);
    gb_init(&o);
}

static void init_defaults(void)
{
    gb_init(NULL);
    print_in_force();
}

/* A child's end and what it wrote on stderr. */
typedef struct outcome {
    int status;
    char err[4096];
} outcome;

static void run(void (*fn)(void), outcome *out)
{
    out->status = gbt_in_child_capturing(fn, out->err, sizeof out->err);
}

static bool exited_0(const outcome *o)
{
    return WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0;
}

static bool aborted(const outcome *o)
{
    return WIFSIGNALED(o->status) && WTERMSIG(o->status) == SIGABRT;
}

/* Every byte of gb_options is an option's member or padding: a member
 * added without its row leaves a gap no padding explains. Each member is
 * aligned to its size (an enum, a size_t, an unsigned). */
GB_TEST(every_member_of_gb_options_is_an_option_of_the_table)
{
    size_t end = 0, most_align = 1;
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        CHECK(t->field != NULL && t->dflt != NULL && t->about != NULL);
        CHECK(t->size == sizeof(int) || t->size == sizeof(size_t));
        if (t->size > most_align)
            most_align = t->size;
        for (int j = 0; j < i; j++) {
            CHECK(strcmp(t->field, gb__options[j].field) != 0);
            CHECK(!t->env || !gb__options[j].env || strcmp(t->env, gb__options[j].env) != 0);
        }
        /* An enum names its type, its three words ("auto", 0, first) and
         * its setting in force by a word; a number's setting is in
         * gb__config, and a variable's number says what it takes. */
        if (t->type) {
            CHECK(strcmp(t->words[0], "auto") == 0 && t->values[0] == 0);
            /* The public header's enum of member m is gb_m. */
            CHECK(strncmp(t->type, "gb_", 3) == 0 && strcmp(t->type + 3, t->field) == 0);
            CHECK(t->words[1] && t->words[2] && t->in_force);
            CHECK_EQ(t->size, sizeof(int));
        } else {
            CHECK(t->in_force == NULL && t->takes != NULL && t->cfg_size > 0);
            CHECK(!t->env || (t->unit > 0 && t->most > 0));
        }
    }
    /* The members, in offset order, from the first byte to the last. */
    size_t covered = 0;
    while (covered < sizeof(gb_options)) {
        const gb__option *next = NULL;
        for (int i = 0; i < ROWS; i++)
            if (gb__options[i].offset >= covered && (!next || gb__options[i].offset < next->offset))
                next = &gb__options[i];
        if (!next)
            break;
        /* Padding before a member is less than the member's size. */
        if (next->offset - covered >= next->size)
            gbt_fail(__FILE__, __LINE__, "gb_options bytes %zu to %zu, before %s, belong to no option of gb__options",
                     covered, next->offset, next->field);
        covered = next->offset + next->size;
        end = covered;
    }
    /* The struct ends where its last member does, padded to its alignment. */
    CHECK_EQ((end + most_align - 1) / most_align * most_align, sizeof(gb_options));
}

/* A variable's value that is not one it takes stops the first use,
 * naming the variable, the value and what it takes. */
static void expect_refused(const gb__option *t, const char *value)
{
    char want[256];
    if (t->type)
        snprintf(want, sizeof want, "giveback: %s=%s: expected %s, %s or %s", t->env, value, t->words[1], t->words[2],
                 t->words[0]);
    else
        snprintf(want, sizeof want, "giveback: %s=%s: expected %s", t->env, value, t->takes);
    row = t, env_value = value;
    gbt_expect_death(first_use_under_env, want);
}

GB_TEST(a_malformed_variable_stops_naming_it_and_what_it_takes)
{
    int tested = 0;
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        if (!t->env)
            continue;
        tested++;
        expect_refused(t, "bogus");
        if (t->type) {
            /* Words match whole: a word with more after it, or a part of one. */
            char longer[64], part[64];
            snprintf(longer, sizeof longer, "%sx", t->words[1]);
            snprintf(part, sizeof part, "%.*s", (int)strlen(t->words[2]) - 1, t->words[2]);
            expect_refused(t, longer);
            expect_refused(t, part);
            continue;
        }
        char past[32];
        snprintf(past, sizeof past, "%llu", t->most + 1);
        expect_refused(t, past);
        expect_refused(t, "-1");
        expect_refused(t, "-0");
        expect_refused(t, "5x");
        /* Its most is taken. */
        char most[32];
        snprintf(most, sizeof most, "%llu", t->most);
        row = t, env_value = most;
        outcome o;
        run(first_use_under_env, &o);
        if (!exited_0(&o))
            gbt_fail(__FILE__, __LINE__, "%s=%s, its most, was refused:\n%s", t->env, most, o.err);
    }
    CHECK(tested > 0);
}

/* The settings in force under the variable at value and under the member
 * at v are the same, or both stop with the same message. */
static void expect_same(const gb__option *t, const char *value, size_t v)
{
    outcome by_env, by_member;
    row = t, env_value = value, member_value = v;
    run(first_use_under_env, &by_env);
    run(init_with_member, &by_member);
    if (by_env.status != by_member.status || strcmp(by_env.err, by_member.err) != 0)
        gbt_fail(__FILE__, __LINE__, "%s=%s and %s=%zu differ: the variable gives (status %d)\n%s\nthe member (status %d)\n%s",
                 t->env, value, t->field, v, by_env.status, by_env.err, by_member.status, by_member.err);
}

/* Each word and number of a variable means what its member's value
 * means; unset, empty and "auto" mean the default, the member's 0. */
GB_TEST(each_value_of_a_variable_means_what_the_member_means)
{
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        if (!t->env)
            continue;
        expect_same(t, "", 0);
        if (t->type) {
            for (int w = 0; w < 3; w++)
                expect_same(t, t->words[w], (size_t)(unsigned)t->values[w]);
            continue;
        }
        expect_same(t, "7", 7 * (size_t)t->unit);
        expect_same(t, "0", t->off);
        if (t->off_word)
            expect_same(t, t->off_word, t->off);
    }
}

/* Each enum member holding no value of its type stops gb_init, naming
 * the member, the value and the type. */
GB_TEST(a_member_outside_its_enum_stops_gb_init_naming_it)
{
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        if (!t->type)
            continue;
        int bad[] = {3, 77, -1};
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            char want[128];
            snprintf(want, sizeof want, "gb_init: %s=%d is not a %s value", t->field, bad[k], t->type);
            row = t, member_value = (size_t)(unsigned)bad[k];
            gbt_expect_death(init_with_member, want);
        }
    }
}

/* Appends ", name=value" (no comma first) to buf. */
static void append(char *buf, size_t size, const char *name, const char *value)
{
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s=%s", len ? ", " : "", name, value);
}

/* The value of the line "field=..." in text, into v. */
static void value_in(const char *text, const char *field, char *v, size_t size)
{
    size_t n = strlen(field);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, field, n) == 0 && l[n] == '=') {
            size_t len = strcspn(l + n + 1, "\n");
            snprintf(v, size, "%.*s", (int)len, l + n + 1);
            return;
        }
    }
    gbt_fail(__FILE__, __LINE__, "no line %s= in:\n%s", field, text);
}

/* A second gb_init, after one with the defaults, asking for option t at
 * v: it returns where a first gb_init at v would settle every option as
 * the defaults do; else it stops, naming each option that differs with
 * the default's setting and the asked one, in the table's order. Returns
 * whether t itself differed. */
static bool expect_second_init(const gb__option *t, size_t v, const outcome *defaults)
{
    outcome first, second;
    row = t, member_value = v;
    run(init_with_member, &first);
    run(init_twice, &second);
    if (aborted(&first)) {
        /* Not to be had here (huge pages where the OS gives none): the
         * second call resolves the same settings and stops the same way. */
        if (!aborted(&second) || strcmp(first.err, second.err) != 0)
            gbt_fail(__FILE__, __LINE__, "%s=%zu stops a first gb_init with\n%s\nbut a second with (status %d)\n%s",
                     t->field, v, first.err, second.status, second.err);
        return false;
    }
    CHECK(exited_0(&first));
    char in_force[1024] = "", asked[1024] = "";
    bool own = false;
    for (int i = 0; i < ROWS; i++) {
        char a[64], b[64];
        value_in(defaults->err, gb__options[i].field, a, sizeof a);
        value_in(first.err, gb__options[i].field, b, sizeof b);
        if (strcmp(a, b) != 0) {
            append(in_force, sizeof in_force, gb__options[i].field, a);
            append(asked, sizeof asked, gb__options[i].field, b);
            own |= &gb__options[i] == t;
        }
    }
    if (!*in_force) {
        if (!exited_0(&second))
            gbt_fail(__FILE__, __LINE__, "%s=%zu settles as the defaults do, but a second gb_init asking for it "
                     "did not return (status %d):\n%s", t->field, v, second.status, second.err);
        return false;
    }
    char want_in_force[1100], want_asked[1100];
    snprintf(want_in_force, sizeof want_in_force, "already initialised with %s (set first by", in_force);
    snprintf(want_asked, sizeof want_asked, "asks for %s", asked);
    const char *at = strstr(second.err, want_asked);
    if (!aborted(&second) || !strstr(second.err, want_in_force) || !at ||
        (at[strlen(want_asked)] != '.' && at[strlen(want_asked)] != '\n'))
        gbt_fail(__FILE__, __LINE__, "a second gb_init asking for %s=%zu: expected it to stop saying\n  %s\n  %s\n"
                 "it ended with status %d, saying:\n%s", t->field, v, want_in_force, want_asked, second.status,
                 second.err);
    return own;
}

GB_TEST(a_second_gb_init_asking_for_one_option_otherwise_stops_naming_it)
{
    outcome defaults;
    run(init_defaults, &defaults);
    CHECK(exited_0(&defaults));
    int differed = 0;
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        bool own = false;
        if (t->type) {
            for (int w = 1; w < 3; w++)
                own |= expect_second_init(t, (size_t)(unsigned)t->values[w], &defaults);
        } else {
            /* A number no default is, and the member's off value. */
            own |= expect_second_init(t, 300000, &defaults);
            if (t->off_word)
                own |= expect_second_init(t, t->off, &defaults);
            /* A number asked for is a number in force: it always differs. */
            if (!own)
                gbt_fail(__FILE__, __LINE__, "%s=300000 was not named by a second gb_init", t->field);
        }
        differed += own;
        if (!own)
            fprintf(stderr, "%s: every value settles as the default does on this machine\n", t->field);
    }
    CHECK(differed > 0);
}

/* Every member set at once, each to a value of its own (an enum at its
 * last word, which every OS takes; a number at 300000 and up, rising down
 * the table so that a first block is under its cap): each number is read
 * from its own bytes and is the setting in force. */
static void init_with_every_member(void)
{
    gb_options o;
    gb_options_init(&o);
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        set_member(&o, t, t->type ? (size_t)(unsigned)t->values[2] : 300000 + (size_t)i * 4096);
    }
    gb_init(&o);
    print_in_force();
}

GB_TEST(every_member_is_read_from_its_own_bytes)
{
    outcome all;
    run(init_with_every_member, &all);
    if (!exited_0(&all))
        gbt_fail(__FILE__, __LINE__, "gb_init with every member set stopped (status %d):\n%s", all.status, all.err);
    for (int i = 0; i < ROWS; i++) {
        const gb__option *t = &gb__options[i];
        if (t->type)
            continue;
        char got[64], want[32];
        value_in(all.err, t->field, got, sizeof got);
        snprintf(want, sizeof want, "%zu", 300000 + (size_t)i * 4096);
        if (strcmp(got, want) != 0)
            gbt_fail(__FILE__, __LINE__, "%s=%s asked with every other member set, but %s is in force", t->field, want,
                     got);
    }
}
