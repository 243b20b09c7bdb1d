/* rtypes.h - the tensor types the typed guards of rules see (module
 * prefix tgRt_; patterns/typed.h has the guards).  See doc/rules.md,
 * Typed guards. */
#ifndef TG_KERNELS_RTYPES_H
#define TG_KERNELS_RTYPES_H

#include "rset.h"

struct tgTy_typer;

/* Make rs's type: built-ins see the kernels' tensor types for a while
 * (the compile pipeline's rewrite); the typer rs had, for tgRt_restore. */
const struct tgTy_typer *tgRt_install(tg_rules *rs);
void tgRt_restore(tg_rules *rs, const struct tgTy_typer *old);

#endif
