/* pc_check.c - built by `make installcheck` with the flags pkg-config gives
 * for the installed tgrel.pc: checks that the public header (which pulls in
 * gmp.h) compiles and that the installed library links and runs. */
#include <stdio.h>
#include <string.h>

#include <tgrel.h>

int main(void)
{
    tg_error err;
    char buf[64];
    /* gmp.h came in through tgrel.h (calling GMP would need -lgmp). */
    size_t zsize = sizeof(mpz_t);

    tg_error_clear(&err);
    if (zsize == 0 || err.code != TG_OK || strcmp(tg_error_format(&err, buf, sizeof buf), "no error") != 0) {
        fprintf(stderr, "pc_check: unexpected result from libtgrel\n");
        return 1;
    }
    printf("libtgrel %s: installed header and library work\n", TG_VERSION);
    return 0;
}
