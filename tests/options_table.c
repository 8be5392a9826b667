/* options_table.c -- prints the runtime's table of options as compiled,
 * a row a line, as `ci/options.sh --tsv` prints it read from the source:
 * member, variable, words, takes, default, what ("-" where a row has none).
 * tests/options.bats holds the two to each other. */
#include "internal.h"

#include <stdio.h>

int main(void)
{
    for (int i = 0; i < gb__options_count; i++) {
        const gb__option *t = &gb__options[i];
        char words[64] = "-";
        if (t->type)
            snprintf(words, sizeof words, "%s,%s,%s", t->words[0], t->words[1], t->words[2]);
        printf("%s\t%s\t%s\t%s\t%s\t%s\n", t->field, t->env ? t->env : "-", words, t->takes ? t->takes : "-",
               t->dflt, t->about);
    }
    return 0;
}
