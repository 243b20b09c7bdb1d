/* scanopt.h - the Scan rewrites (module prefix tgSo_): relations of two
 * arguments written in C, defined in every rule set's logic environment,
 * that patterns/lib/scan.rules gathers in its database scan_opt (see
 * doc/scan.md, "Rewrites", for what each does). */
#ifndef TG_SCANOPT_H
#define TG_SCANOPT_H

#include "tgrel.h"

/* Define the scan-* relations in env: 0, or -1 with err filled. */
int tgSo_define(tg_env *env, tg_ctx *ctx, tg_error *err);

#endif
